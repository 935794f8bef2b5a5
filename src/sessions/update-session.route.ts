import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { TillError, invalidField } from '../common/errors.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { isUniqueViolation } from '../db/index.ts';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { checkTerms, parseCurrency, parseMoneyField, parseQuotableCurrency, sessionFields } from './fields.ts';
import { findMerchantSession, isExpired, payabilityWarnings, sessionCreatedBody } from './sessions.ts';
import { BODY_LIMIT, SessionCreated } from './create-session.route.ts';
import { hasPaymentInProgress } from './payment-guard.ts';

export const UpdateSessionBody = z
  .strictObject({
    sessionId: z.string().min(1, 'must not be empty').meta({ description: 'The session to update' }),
    orderId: sessionFields.orderId.optional(),
    concept: sessionFields.concept.optional(),
    amount: sessionFields.amount.optional(),
    minAmount: sessionFields.minAmount.optional(),
    editable: sessionFields.editable.optional(),
    currency: sessionFields.currency.optional(),
    successUrl: sessionFields.successUrl.optional(),
    failUrl: sessionFields.failUrl.optional(),
    cancelUrl: sessionFields.cancelUrl.optional(),
  })
  .meta({ id: 'UpdatePaymentSession' });

const doc: RouteDoc = {
  method: 'PUT',
  url: '/api/checkout/v2/payment_session',
  tag: 'Payment sessions',
  summary: 'Update a payment session (E2)',
  description: 'Changes only the fields sent; `null` clears an optional field. Used for sessions that take several payments, such as donation links.',
  security: 'apiKey',
  body: UpdateSessionBody,
  responses: {
    200: { description: 'Session updated', schema: SessionCreated },
    400: { description: 'A field is invalid; `error.field` names it', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
    409: { description: 'TRANSIENT session settled, expired or with a payment in progress; or orderId already used', schema: ErrorResponse },
    413: { description: 'Body over 16 KiB', schema: ErrorResponse },
    415: { description: 'Content-Type is not application/json', schema: ErrorResponse },
    503: { description: 'The new currency has no fresh exchange rate right now', schema: ErrorResponse },
  },
};

export function registerUpdateSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, { bodyLimit: BODY_LIMIT }, async (request) => {
    const { merchantId, walletConfigured } = await requireMerchant(context, request);
    const input = validate(UpdateSessionBody, request.body);
    const session = await findMerchantSession(context.db, merchantId, input.sessionId);
    if (!session) throw new TillError('not_found', { what: `Payment session ${input.sessionId}` });

    const now = context.now();
    if (session.order_type === 'TRANSIENT') {
      if (session.status === 'SUCCESS') throw new TillError('session_settled');
      if (isExpired(session, now)) throw new TillError('session_expired');
      if (await hasPaymentInProgress(context.db, session.id)) throw new TillError('payment_in_progress');
    }

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

    const changes = {
      ...(input.orderId !== undefined ? { order_id: input.orderId } : {}),
      ...(input.concept !== undefined ? { concept: input.concept } : {}),
      ...(input.successUrl !== undefined ? { success_url: input.successUrl } : {}),
      ...(input.failUrl !== undefined ? { fail_url: input.failUrl } : {}),
      ...(input.cancelUrl !== undefined ? { cancel_url: input.cancelUrl } : {}),
      amount_minor: amountMinor,
      currency,
      min_amount_minor: minAmountMinor,
      editable: editable ? 1 : 0,
      updated_at: now,
    };
    try {
      // Conditional on the version read, so a concurrent payment or update is never overwritten.
      const result = await context.db
        .updateTable('payment_sessions')
        .set((eb) => ({ ...changes, version: eb('version', '+', 1) }))
        .where('id', '=', session.id)
        .where('version', '=', session.version)
        .where('status', '=', session.status)
        .$if(session.order_type === 'TRANSIENT', (qb) => qb.where('payments_in_progress', '=', 0))
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw new TillError('session_changed');
    } catch (error) {
      if (isUniqueViolation(error)) throw new TillError('order_id_in_use', { orderId: String(input.orderId), field: 'orderId' });
      throw error;
    }
    return sessionCreatedBody(context.config.baseUrl, session.id, payabilityWarnings(merchantId, { walletConfigured, sessionPayTo: session.pay_to }));
  });
}
