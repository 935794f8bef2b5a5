import type { Rails } from '../../chain/rails.ts';
import { TillError } from '../../common/errors.ts';
import type { AppContext } from '../../context.ts';
import { firstSuccessfulPayment, type PaymentRow } from '../../payments/payments.ts';
import { isExpired } from '../../sessions/sessions.ts';
import { payeeOf, quoteOffer } from '../../x402/pricing.ts';
import { findSessionToQuote, type Quote, type SessionToQuote } from '../../x402/quotes.ts';
import { quotableAssets, type X402Services } from '../../x402/services.ts';

/** What the hosted page shows for a session id, and the HTTP status it answers with (docs/checkout.md). */
export type CheckoutState =
  | { kind: 'unknown'; status: 404 }
  | { kind: 'expired'; status: 410; session: SessionToQuote }
  | { kind: 'paid'; status: 200; session: SessionToQuote; payment: PaymentRow }
  | { kind: 'no_wallet'; status: 422; session: SessionToQuote }
  | { kind: 'below_minimum'; status: 422; session: SessionToQuote }
  | { kind: 'rate_unavailable'; status: 503; session: SessionToQuote }
  | { kind: 'busy'; status: 429; session: SessionToQuote }
  | { kind: 'unavailable'; status: 503; session: SessionToQuote }
  | { kind: 'payable'; status: 200; session: SessionToQuote; quote: Quote; payTo: string; asset: string; rails: Pick<Rails, 'network' | 'walletRpcUrl'> };

/**
 * The session behind `uid`, read and quoted as the x402 endpoint does: the same session query, the
 * same payee rule and the same stored quote (`x402/pricing.ts`), so the page shows exactly what a
 * proof is checked against. An editable session is quoted at its own amount; the page re-quotes a
 * chosen amount through the x402 endpoint's `?amount=`. A new quote counts against `client`, the client IP, as there.
 */
export async function checkoutState(context: AppContext, services: X402Services | undefined, sessionId: string, client: string): Promise<CheckoutState> {
  const now = context.now();
  const found = await findSessionToQuote(context.db, sessionId, { assets: quotableAssets(context.config.modes, services), now });
  if (!found) return { kind: 'unknown', status: 404 };
  const { session } = found;
  if (session.order_type === 'TRANSIENT' && session.status === 'SUCCESS') {
    const payment = await firstSuccessfulPayment(context.db, session.id);
    if (payment) return { kind: 'paid', status: 200, session, payment };
  }
  if (isExpired(session, now) || session.status !== 'OPEN') return { kind: 'expired', status: 410, session };
  const rails = services?.rails[session.mode];
  if (!services || !rails) return { kind: 'unavailable', status: 503, session };
  try {
    const payTo = payeeOf(session);
    const quoted = await quoteOffer({ context, services, rails }, found, session.amount_minor, payTo, now, client);
    if ('answer' in quoted) return { kind: 'below_minimum', status: 422, session };
    const { quote } = quoted;
    return { kind: 'payable', status: 200, session, quote, payTo, asset: rails.usdcAddress, rails };
  } catch (error) {
    if (error instanceof TillError && error.code === 'no_pay_to') return { kind: 'no_wallet', status: 422, session };
    if (error instanceof TillError && error.code === 'rate_unavailable') return { kind: 'rate_unavailable', status: 503, session };
    if (error instanceof TillError && error.code === 'rate_limited') return { kind: 'busy', status: 429, session };
    throw error;
  }
}
