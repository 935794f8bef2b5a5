import { type Selectable, sql } from 'kysely';
import { newId } from '../common/ids.ts';
import { MAX_TIMEOUT_SECONDS } from '../common/network.ts';
import type { Db } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import type { Mode, PaymentQuotesTable } from '../db/schema.ts';
import { currencyExponent } from '../money/iso4217.ts';
import type { RatesProvider } from '../money/rates.ts';
import { fiatMinorToUsdcBaseUnits } from '../money/usdc.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { QUOTE_TTL_MS } from './protocol.ts';

export type Quote = Selectable<PaymentQuotesTable>;

/**
 * The latest quote on these terms still payable for a whole maxTimeoutSeconds after `payableAfter`.
 * The same rule is joined into `sessionToQuote` (its expiry checked by `findSessionToQuote`) and
 * checked by `reusableFor`; change all three together. The join is kept because a separate query per challenge measured far slower.
 */
/**
 * The latest quote on these terms; whether it is still payable long enough is checked on the row
 * (reusableFor), for the same reason as in `sessionToQuote` below: an `expires_at > ?` here made
 * PostgreSQL's first plans walk the expiry index over every recent quote.
 */
const latestQuoteOnTerms = prepareQuery((db: Db, params: { sessionId: string; sessionVersion: number; amountMinor: bigint; payTo: string; asset: string }) =>
  db
    .selectFrom('payment_quotes')
    .selectAll()
    .where('session_id', '=', params.sessionId)
    .where('session_version', '=', params.sessionVersion)
    .where('amount_minor', '=', params.amountMinor)
    .where('pay_to', '=', params.payTo)
    .where('asset', '=', params.asset)
    .orderBy('expires_at', 'desc')
    .limit(1),
);

/** The merchant's payout wallet of the session's own mode (`s`, `m`): test payments to the test wallet, live to the live one. */
const SESSION_MODE_WALLET = sql<string | null>`CASE WHEN s.mode = 'sandbox' THEN m.test_wallet_address ELSE m.wallet_address END`;

/** A session with its merchant's current name and payout wallet. */
export type SessionToQuote = SessionRow & { merchant_name: string; merchant_wallet_address: string | null };

/**
 * One query for a challenge: the session, its merchant's current name and payout wallet, and the
 * latest quote of the session's own amount on its terms (the one a fixed-amount session is quoted
 * at), so an unpaid request costs one round trip. Nothing here is cached: every call reads the
 * database. Whether that quote is still payable long enough is checked on the row
 * (findSessionToQuote), not in the query: with `expires_at > ?` in it, PostgreSQL's plan for given
 * values (a prepared statement's first executions) estimates from statistics that hold no
 * unexpired quote and walks `payment_quotes_expires` backwards over every quote made in the last
 * 30 s, filtering them by session; without it the only condition an index can take is the
 * session's id. The latest quote on these terms is the one `latestQuoteOnTerms` finds, and is
 * reusable whenever that one is.
 */
const sessionToQuote = prepareQuery((db: Db, params: { sessionId: string; sandboxAsset: string; liveAsset: string }) =>
  db
    .selectFrom('payment_sessions as s')
    .innerJoin('merchants as m', 'm.id', 's.merchant_id')
    .leftJoin('payment_quotes as q', (join) =>
      join.on((eb) =>
        eb(
          'q.id',
          '=',
          eb
            .selectFrom('payment_quotes as r')
            .select('r.id')
            .whereRef('r.session_id', '=', 's.id')
            .whereRef('r.session_version', '=', 's.version')
            .whereRef('r.amount_minor', '=', 's.amount_minor')
            .where((r) => r('r.pay_to', '=', r.fn.coalesce('s.pay_to', SESSION_MODE_WALLET)))
            .where('r.asset', '=', (r) => r.case().when('s.mode', '=', 'live').then(params.liveAsset).else(params.sandboxAsset).end())
            .orderBy('r.expires_at', 'desc')
            .limit(1),
        ),
      ),
    )
    .selectAll('s')
    .select([
      'm.name as merchant_name',
      SESSION_MODE_WALLET.as('merchant_wallet_address'),
      'q.id as quote_id',
      'q.session_version as quote_session_version',
      'q.amount_minor as quote_amount_minor',
      'q.currency as quote_currency',
      'q.rate as quote_rate',
      'q.rate_source as quote_rate_source',
      'q.usdc_amount as quote_usdc_amount',
      'q.pay_to as quote_pay_to',
      'q.asset as quote_asset',
      'q.created_at as quote_created_at',
      'q.expires_at as quote_expires_at',
    ])
    .where('s.id', '=', params.sessionId)
    // Only a served mode (one named with a token) is found: a session of another mode is not, as an unknown one.
    .where((eb) =>
      eb.or([
        eb.and([eb('s.mode', '=', 'sandbox'), eb(eb.val(params.sandboxAsset), '!=', '')]),
        eb.and([eb('s.mode', '=', 'live'), eb(eb.val(params.liveAsset), '!=', '')]),
      ]),
    ),
);

/**
 * The session behind a challenge (E3, and the hosted page), and a quote of its own amount that may
 * be reused (quoteFor checks it). `assets` names each payable mode's token: a session of a mode
 * without one is not found, exactly as an unknown one.
 */
export async function findSessionToQuote(
  db: Db,
  sessionId: string,
  terms: { assets: Partial<Record<Mode, string>>; now: number },
): Promise<{ session: SessionToQuote; reusable: Quote | undefined } | undefined> {
  const row = await sessionToQuote.executeTakeFirst(db, { sessionId, sandboxAsset: terms.assets.sandbox ?? '', liveAsset: terms.assets.live ?? '' });
  if (!row) return undefined;
  // The rule of a reusable quote: payable for a whole maxTimeoutSeconds after now.
  const reusable: Quote | undefined =
    row.quote_id === null || !(row.quote_expires_at! > terms.now + MAX_TIMEOUT_SECONDS * 1000)
      ? undefined
      : {
          id: row.quote_id,
          session_id: row.id,
          session_version: row.quote_session_version!,
          amount_minor: row.quote_amount_minor!,
          currency: row.quote_currency!,
          rate: row.quote_rate!,
          rate_source: row.quote_rate_source!,
          usdc_amount: row.quote_usdc_amount!,
          pay_to: row.quote_pay_to!,
          asset: row.quote_asset!,
          created_at: row.quote_created_at!,
          expires_at: row.quote_expires_at!,
        };
  // The row is the session, with the merchant's and the quote's columns beside its own.
  const session: SessionToQuote = row;
  return { session, reusable };
}

/** True when `quote` is on these terms and payable for a whole maxTimeoutSeconds after now. */
function reusableFor(quote: Quote, terms: { session: SessionRow; amountMinor: bigint; payTo: string; asset: string; now: number }): boolean {
  return (
    quote.session_id === terms.session.id &&
    quote.session_version === terms.session.version &&
    quote.amount_minor === terms.amountMinor &&
    quote.pay_to === terms.payTo &&
    quote.asset === terms.asset &&
    quote.expires_at > terms.now + MAX_TIMEOUT_SECONDS * 1000
  );
}

/**
 * The quote a challenge is based on: amount, rate and payee, stored so that a proof is checked
 * against what was offered. A recent quote on the same terms is reused rather than stored again.
 */
export async function quoteFor(
  db: Db,
  rates: RatesProvider,
  terms: {
    session: SessionRow;
    amountMinor: bigint;
    payTo: string;
    asset: string;
    now: number;
    candidate?: Quote | undefined;
    beforeNewQuote?: () => Promise<void>;
  },
): Promise<Quote> {
  const { session, amountMinor, payTo, asset, now, candidate, beforeNewQuote } = terms;
  // A candidate read with the session (findSessionToQuote) saves the lookup when it fits these terms.
  if (candidate && reusableFor(candidate, terms)) return candidate;
  const latest = await latestQuoteOnTerms.executeTakeFirst(db, { sessionId: session.id, sessionVersion: session.version, amountMinor, payTo, asset });
  if (latest && reusableFor(latest, terms)) return latest;
  // Only a new row is counted: an editable session's ?amount= must not let anyone fill the table.
  await beforeNewQuote?.();

  const rate = await rates.getRate(session.currency);
  const quote: Quote = {
    id: newId('q_'),
    session_id: session.id,
    session_version: session.version,
    amount_minor: amountMinor,
    currency: session.currency,
    rate: rate.rate,
    rate_source: rate.source,
    usdc_amount: fiatMinorToUsdcBaseUnits(amountMinor, currencyExponent(session.currency) ?? 2, rate.rate),
    pay_to: payTo,
    asset,
    created_at: now,
    expires_at: now + QUOTE_TTL_MS,
  };
  await db.insertInto('payment_quotes').values(quote).execute();
  return quote;
}

export async function findQuote(db: Db, quoteId: string): Promise<Quote> {
  return db.selectFrom('payment_quotes').selectAll().where('id', '=', quoteId).executeTakeFirstOrThrow();
}

/** The unexpired quote of this session that an authorized value pays, if any. */
export async function findQuoteForValue(db: Db, sessionId: string, value: bigint, now: number): Promise<Quote | undefined> {
  return (
    db
      .selectFrom('payment_quotes')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('usdc_amount', '=', value)
      .where('expires_at', '>', now)
      // A quote of the session as it is now wins over an older one of the same value.
      .orderBy('session_version', 'desc')
      .orderBy('expires_at', 'desc')
      .limit(1)
      .executeTakeFirst()
  );
}

/** Quotes that ran out more than `QUOTE_RETENTION_MS` ago and that no payment points at are not needed again. */
const QUOTE_RETENTION_MS = 60 * 60 * 1000;
const PURGE_SLICE = 1000;
/**
 * How far below the end of its previous sweep a sweep looks again. Quotes are made with an expiry in
 * the future, so new candidates appear only above that end; the margin covers clock steps.
 */
const RESWEEP_MS = 24 * 60 * 60 * 1000;
/** Per database handle: the retention cutoff of the last complete sweep (below it every unused quote is gone). */
const sweptUpTo = new WeakMap<Db, number>();

/**
 * The quotes of paid orders are kept for good, so a database that has grown holds a great many
 * expired quotes that stay. A sweep therefore walks expired quotes in slices by (expires_at, id),
 * the first one of a process from the start and later ones only from where the previous sweep
 * ended, instead of re-reading every kept quote every few seconds (on SQLite that read blocked
 * the event loop for seconds at a million orders).
 */
export async function purgeOldQuotes(db: Db, now: number): Promise<number> {
  const cutoff = now - QUOTE_RETENTION_MS;
  const previous = sweptUpTo.get(db);
  let after = { expiresAt: previous === undefined ? Number.MIN_SAFE_INTEGER : previous - RESWEEP_MS, id: '' };
  let purged = 0;
  for (;;) {
    const slice = await db
      .selectFrom('payment_quotes')
      .select(['id', 'expires_at'])
      .where('expires_at', '>=', after.expiresAt)
      .where('expires_at', '<', cutoff)
      .where((eb) => eb.or([eb('expires_at', '>', after.expiresAt), eb('id', '>', after.id)]))
      .orderBy('expires_at')
      .orderBy('id')
      .limit(PURGE_SLICE)
      .execute();
    if (slice.length) {
      const result = await db
        .deleteFrom('payment_quotes')
        .where(
          'id',
          'in',
          slice.map((row) => row.id),
        )
        .where((w) => w.not(w.exists(w.selectFrom('payments as p').select('p.id').whereRef('p.quote_id', '=', 'payment_quotes.id'))))
        .executeTakeFirst();
      purged += Number(result.numDeletedRows);
    }
    if (slice.length < PURGE_SLICE) break;
    const last = slice.at(-1)!;
    after = { expiresAt: Number(last.expires_at), id: last.id };
    // node:sqlite runs each statement on the event loop: let requests in between the slices of a long walk.
    await new Promise((resolve) => setImmediate(resolve));
  }
  sweptUpTo.set(db, cutoff);
  return purged;
}
