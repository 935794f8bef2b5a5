import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { invalidField, TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { BODY_LIMIT, refusePayoutWalletFields, SESSION_WRITE_REFUSALS, SessionCreated, UpdateSessionBody } from './schemas.ts';
import { assertChangeable, findMerchantSession, updateSession } from './sessions.ts';
import { checkTerms, parseCurrency, parseMoneyField, parseQuotableCurrency } from './terms.ts';
import { payabilityWarnings, sessionCreatedBody } from './views.ts';

const doc: RouteDoc = {
  method: 'PUT',
  url: '/api/checkout/v2/payment_session',
  tag: 'Payment sessions',
  summary: 'Update a payment session (E2)',
  description: 'Changes only the fields sent; `null` clears an optional field. Used for sessions that take several payments, such as donation links.',
  security: 'apiKey',
  body: UpdateSessionBody,
  responses: {
    ...SESSION_WRITE_REFUSALS,
    200: { description: 'Session updated', schema: SessionCreated },
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
    409: { description: 'TRANSIENT session settled, expired or with a payment in progress; or orderId already used', schema: ErrorResponse },
    503: { description: 'The new currency has no fresh exchange rate right now', schema: ErrorResponse },
  },
};

export function registerUpdateSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, { bodyLimit: BODY_LIMIT }, async (request) => {
    const { merchantId, walletConfigured } = await requireMerchant(context, request);
    refusePayoutWalletFields(request.body);
    const input = validate(UpdateSessionBody, request.body);
    const session = await findMerchantSession(context.db, merchantId, input.sessionId);
    if (!session) throw new TillError('not_found', { what: `Payment session ${input.sessionId}` });

    const now = context.now();
    await assertChangeable(context.db, session, now);

    const { currency, exponent } = input.currency === undefined ? parseCurrency(session.currency) : await parseQuotableCurrency(input.currency, context.rates);
    const amountMinor = input.amount === undefined ? session.amount_minor : parseMoneyField(request.body, 'amount', exponent, currency);
    const editable = input.editable === undefined ? session.editable === 1 : input.editable === true;
    let minAmountMinor = session.min_amount_minor;
    if (input.minAmount === null) minAmountMinor = null;
    else if (input.minAmount !== undefined) minAmountMinor = parseMoneyField(request.body, 'minAmount', exponent, currency);
    if (input.currency !== undefined && input.currency.toUpperCase() !== session.currency) {
      // Amounts are in the session's currency: changing it requires restating them.
      if (input.amount === undefined) throw invalidField('amount', 'must be sent when currency changes');
      if (minAmountMinor !== null && input.minAmount === undefined) throw invalidField('minAmount', 'must be sent (or null) when currency changes');
    }
    checkTerms({ amountMinor, currency, minAmountMinor, editable });

    await updateSession(
      context.db,
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
    return sessionCreatedBody(context.config.baseUrl, session.id, payabilityWarnings(merchantId, { walletConfigured, sessionPayTo: session.pay_to }));
  });
}
