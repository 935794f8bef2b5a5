import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { PaymentQuotesTable } from '../db/schema.ts';
import { newId } from '../common/ids.ts';
import { currencyExponent } from '../money/iso4217.ts';
import { fiatMinorToUsdcBaseUnits } from '../money/usdc.ts';
import type { RatesProvider } from '../money/rates.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { MAX_TIMEOUT_SECONDS, QUOTE_TTL_MS } from './protocol.ts';

export type Quote = Selectable<PaymentQuotesTable>;

/**
 * The quote a challenge is based on: amount, rate and payee, stored so that a proof is checked
 * against what was offered. A recent quote on the same terms is reused rather than stored again.
 */
export async function quoteFor(
  db: Db,
  rates: RatesProvider,
  terms: { session: SessionRow; amountMinor: bigint; payTo: string; asset: string; now: number },
): Promise<Quote> {
  const { session, amountMinor, payTo, asset, now } = terms;
  const reusable = await db
    .selectFrom('payment_quotes')
    .selectAll()
    .where('session_id', '=', session.id)
    .where('session_version', '=', session.version)
    .where('amount_minor', '=', amountMinor)
    .where('pay_to', '=', payTo)
    .where('asset', '=', asset)
    .where('expires_at', '>', now + MAX_TIMEOUT_SECONDS * 1000)
    .orderBy('expires_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (reusable) return reusable;

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
