import { invalidField, TillError } from '../common/errors.ts';
import type { Mode } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { setSessionReceiptAddress } from '../mail/receipt-addresses.ts';
import { STATIC_BUYER_EMAIL } from './create-session.ts';
import { assertChangeable, findMerchantSession, updateSession } from './sessions.ts';
import { checkTerms, parseCurrency, parseMoney, parseQuotableCurrency } from './terms.ts';
import { payabilityWarnings, type SessionWarning, sessionCreatedBody } from './views.ts';

/**
 * What E2 changes (and the dashboard's edit form): each field optional, `null` clears an optional
 * one. Money is the exact decimal text the client sent, or a number.
 */
export type SessionUpdateInput = {
  sessionId: string;
  amount?: number | string | undefined;
  currency?: string | undefined;
  minAmount?: number | string | null | undefined;
  editable?: boolean | null | undefined;
  orderId?: string | null | undefined;
  concept?: string | null | undefined;
  successUrl?: string | null | undefined;
  cancelUrl?: string | null | undefined;
  failUrl?: string | null | undefined;
  /** Replaces the address the buyer's receipts are mailed to; null removes it. */
  buyerEmail?: string | null | undefined;
};

type Context = Pick<AppContext, 'config' | 'db' | 'now' | 'rates'>;

/**
 * Updates a merchant's session (E2): refused when it is another merchant's (404), archived, or a
 * TRANSIENT one that is paid, expired or being paid; the terms are checked on the merged result and
 * written in one conditional update, so nothing is half-saved.
 */
export async function updatePaymentSession(
  context: Context,
  merchantId: string,
  input: SessionUpdateInput,
  options: {
    walletConfigured: boolean;
    mode: Mode;
    /** Written in the update's transaction (the dashboard's line in the activity log). */
    alsoInTransaction?: (trx: Db) => Promise<void>;
  },
): Promise<{ sessionId: string; redirectUrl: string; warnings?: SessionWarning[] }> {
  const session = await findMerchantSession(context.db, options.mode, merchantId, input.sessionId);
  if (!session) throw new TillError('not_found', { what: `Payment session ${input.sessionId}` });

  const now = context.now();
  await assertChangeable(context.db, session, now);

  const { currency, exponent } = input.currency === undefined ? parseCurrency(session.currency) : await parseQuotableCurrency(input.currency, context.rates);
  const amountMinor = input.amount === undefined ? session.amount_minor : parseMoney(input.amount, 'amount', exponent, currency);
  const editable = input.editable === undefined ? session.editable === 1 : input.editable === true;
  let minAmountMinor = session.min_amount_minor;
  if (input.minAmount === null) minAmountMinor = null;
  else if (input.minAmount !== undefined) minAmountMinor = parseMoney(input.minAmount, 'minAmount', exponent, currency);
  if (input.currency !== undefined && input.currency.toUpperCase() !== session.currency) {
    // Amounts are in the session's currency: changing it requires restating them.
    if (input.amount === undefined) throw invalidField('amount', 'must be sent when currency changes');
    if (minAmountMinor !== null && input.minAmount === undefined) throw invalidField('minAmount', 'must be sent (or null) when currency changes');
  }
  checkTerms({ amountMinor, currency, minAmountMinor, editable });
  const { buyerEmail } = input;
  if (buyerEmail != null && session.order_type === 'STATIC') throw invalidField('buyerEmail', STATIC_BUYER_EMAIL);

  const write = async (trx: Db) => {
    await updateSession(
      trx,
      session,
      {
        ...(input.orderId !== undefined ? { order_id: input.orderId } : {}),
        ...(input.concept !== undefined ? { concept: input.concept } : {}),
        ...(input.successUrl !== undefined ? { success_url: input.successUrl } : {}),
        ...(input.failUrl !== undefined ? { fail_url: input.failUrl } : {}),
        ...(input.cancelUrl !== undefined ? { cancel_url: input.cancelUrl } : {}),
        amount_minor: amountMinor,
        currency,
        min_amount_minor: minAmountMinor,
        editable: editable ? 1 : 0,
      },
      now,
    );
    if (buyerEmail !== undefined) await setSessionReceiptAddress(trx, session.id, buyerEmail, now);
    await options.alsoInTransaction?.(trx);
  };
  // The session and its buyer's address (and what the caller writes with it) change together or not at all.
  await (buyerEmail === undefined && !options.alsoInTransaction ? write(context.db) : context.db.transaction().execute(write));
  return sessionCreatedBody(
    context.config.baseUrl,
    session.id,
    payabilityWarnings(merchantId, { walletConfigured: options.walletConfigured, sessionPayTo: session.pay_to }),
  );
}
