import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { TillError } from '../common/errors.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { getAddress } from 'viem';
import { formatUsdc } from '../money/usdc.ts';
import { findMerchantSession, sessionView } from './sessions.ts';
import { decimalNumber } from '../money/iso4217.ts';

const Params = z.strictObject({ sessionId: z.string().min(1).max(64) });

const SessionPayment = z
  .object({
    paymentId: z.string().nullable().meta({ description: 'The order id (TX-…) once settled; null while pending or failed' }),
    status: z.enum(['PENDING', 'SUCCESS', 'FAILED', 'REVERSED']),
    amount: z.number(),
    currency: z.string(),
    tokenAmount: z.string().meta({ description: 'USDC, as a decimal string' }),
    rate: z.string(),
    payer: z.string(),
    payTo: z.string(),
    transactionHash: z.string().nullable(),
    receiptUrl: z.string().nullable().meta({ description: 'The public receipt (E4) of a settled order' }),
    failureReason: z.string().nullable(),
    createdAt: z.string(),
    settledAt: z.string().nullable(),
  })
  .meta({ id: 'SessionPayment' });

export const SessionDetails = z
  .object({
    sessionId: z.string(),
    redirectUrl: z.string(),
    status: z.enum(['OPEN', 'SUCCESS', 'EXPIRED']),
    orderType: z.enum(['STATIC', 'TRANSIENT']),
    amount: z.number(),
    currency: z.string(),
    minAmount: z.number().nullable(),
    editable: z.boolean(),
    orderId: z.string().nullable(),
    concept: z.string().nullable(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    failUrl: z.string().nullable(),
    expiresAt: z.string().nullable().meta({ description: 'ISO 8601; null for STATIC sessions, which never expire' }),
    createdAt: z.string(),
    updatedAt: z.string(),
    payments: z.array(SessionPayment).meta({ description: 'Every payment attempt that was claimed for this session, oldest first; each successful one is an order' }),
  })
  .meta({ id: 'PaymentSessionDetails' });

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session/{sessionId}',
  tag: 'Payment sessions',
  summary: 'Read a payment session',
  description: 'Status, amounts, expiry and the payments made so far, each with its order id and receipt once settled.',
  security: 'apiKey',
  params: Params,
  responses: {
    200: { description: 'The session', schema: SessionDetails },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
  },
};

export function registerGetSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId } = await requireMerchant(context, request);
    const { sessionId } = validate(Params, request.params);
    const session = await findMerchantSession(context.db, merchantId, sessionId);
    if (!session) throw new TillError('not_found', { what: `Payment session ${sessionId}` });
    const payments = await context.db.selectFrom('payments').selectAll().where('session_id', '=', session.id).orderBy('created_at').orderBy('id').execute();
    return {
      ...sessionView(context.config.baseUrl, session, context.now()),
      payments: payments.map((p) => ({
        paymentId: p.public_order_id,
        status: p.status,
        amount: decimalNumber(p.amount_minor, p.currency),
        currency: p.currency,
        tokenAmount: formatUsdc(p.value),
        rate: p.rate,
        payer: getAddress(p.payer),
        payTo: getAddress(p.pay_to),
        transactionHash: p.tx_hash,
        receiptUrl: p.public_order_id ? `${context.config.baseUrl}/checkout/v2/orders/receipt/${p.public_order_id}` : null,
        failureReason: p.failure_reason,
        createdAt: new Date(p.created_at).toISOString(),
        settledAt: p.settled_at === null ? null : new Date(p.settled_at).toISOString(),
      })),
    };
  });
}
