import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import type { PaymentQuotesTable } from '../db/schema.ts';
import { newId } from '../common/ids.ts';
import { currencyExponent } from '../money/iso4217.ts';
import { fiatMinorToUsdcBaseUnits } from '../money/usdc.ts';
import type { RatesProvider } from '../money/rates.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { MAX_TIMEOUT_SECONDS, QUOTE_TTL_MS } from './protocol.ts';

export type Quote = Selectable<PaymentQuotesTable>;

/** The latest quote on these terms still payable for a whole maxTimeoutSeconds after `payableAfter`. */
const reusableQuote = prepareQuery(
  (db: Db, params: { sessionId: string; sessionVersion: number; amountMinor: bigint; payTo: string; asset: string; payableAfter: number }) =>
    db
      .selectFrom('payment_quotes')
      .selectAll()
      .where('session_id', '=', params.sessionId)
      .where('session_version', '=', params.sessionVersion)
      .where('amount_minor', '=', params.amountMinor)
      .where('pay_to', '=', params.payTo)
      .where('asset', '=', params.asset)
      .where('expires_at', '>', params.payableAfter)
      .orderBy('expires_at', 'desc')
      .limit(1),
);

/** A session with its merchant's current name and payout wallet. */
export type SessionToQuote = SessionRow & { merchant_name: string; merchant_wallet_address: string | null };

/** The session behind a challenge, with its merchant's current name and payout wallet, in one read. Nothing is cached. */
const sessionToQuote = prepareQuery((db: Db, params: { sessionId: string }) =>
  db
    .selectFrom('payment_sessions as s')
    .innerJoin('merchants as m', 'm.id', 's.merchant_id')
    .selectAll('s')
    .select(['m.name as merchant_name', 'm.wallet_address as merchant_wallet_address'])
    .where('s.id', '=', params.sessionId),
);

export function findSessionToQuote(db: Db, sessionId: string): Promise<SessionToQuote | undefined> {
  return sessionToQuote.executeTakeFirst(db, { sessionId });
}

/**
 * The quote a challenge is based on: amount, rate and payee, stored so that a proof is checked
 * against what was offered. A recent quote on the same terms is reused rather than stored again.
 */
export async function quoteFor(
  db: Db,
  rates: RatesProvider,
  terms: { session: SessionRow; amountMinor: bigint; payTo: string; asset: string; now: number; beforeNewQuote?: () => Promise<void> },
): Promise<Quote> {
  const { session, amountMinor, payTo, asset, now, beforeNewQuote } = terms;
  const reusable = await reusableQuote.executeTakeFirst(db, {
    sessionId: session.id,
    sessionVersion: session.version,
    amountMinor,
    payTo,
    asset,
    payableAfter: now + MAX_TIMEOUT_SECONDS * 1000,
  });
  if (reusable) return reusable;
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

/** The unexpired quote of this session that an authorized value pays, if any. */
export async function findQuoteForValue(db: Db, sessionId: string, value: bigint, now: number): Promise<Quote | undefined> {
  return db
    .selectFrom('payment_quotes')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('usdc_amount', '=', value)
    .where('expires_at', '>', now)
    .orderBy('expires_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Quotes that ran out more than `QUOTE_RETENTION_MS` ago and that no payment points at are not needed again. */
const QUOTE_RETENTION_MS = 60 * 60 * 1000;
const PURGE_BATCH = 1000;

export async function purgeOldQuotes(db: Db, now: number): Promise<number> {
  let purged = 0;
  for (;;) {
    const result = await db
      .deleteFrom('payment_quotes')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('payment_quotes as q')
          .select('q.id')
          .where('q.expires_at', '<', now - QUOTE_RETENTION_MS)
          .where((w) => w.not(w.exists(w.selectFrom('payments as p').select('p.id').whereRef('p.quote_id', '=', 'q.id'))))
          .limit(PURGE_BATCH),
      )
      .executeTakeFirst();
    const deleted = Number(result.numDeletedRows);
    purged += deleted;
    if (deleted < PURGE_BATCH) return purged;
  }
}
