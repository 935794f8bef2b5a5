import type { FastifyInstance } from 'fastify';
import { getAddress } from 'viem';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { decimalNumber } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import { SessionDetails, SessionParams } from './schemas.ts';
import { findMerchantSession } from './sessions.ts';
import { sessionView } from './views.ts';

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session/{sessionId}',
  tag: 'Payment sessions',
  summary: 'Read a payment session',
  description: 'Status, amounts, expiry and the payments made so far, each with its order id and receipt once settled.',
  security: 'apiKey',
  params: SessionParams,
  responses: {
    200: { description: 'The session', schema: SessionDetails },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
  },
};

export function registerGetSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId } = await requireMerchant(context, request);
    const { sessionId } = validate(SessionParams, request.params);
    const session = await findMerchantSession(context.db, context.config.mode, merchantId, sessionId);
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
