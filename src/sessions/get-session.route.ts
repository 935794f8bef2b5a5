import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../http/context.ts';
import { notFound } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { findMerchantSession, sessionView } from './sessions.ts';
import { ErrorResponse } from './create-session.route.ts';

const Params = z.strictObject({ sessionId: z.string().min(1).max(64) });

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
  })
  .meta({ id: 'PaymentSessionDetails' });

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session/{sessionId}',
  tag: 'Payment sessions',
  summary: 'Read a payment session',
  description: 'Status, amounts, expiry and the payments made so far.',
  security: 'apiKey',
  params: Params,
  responses: {
    200: { description: 'The session', schema: SessionDetails },
    401: { description: 'Missing, unknown, revoked or wrong-mode API key', schema: ErrorResponse },
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
  },
};

export function registerGetSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId } = await requireMerchant(context, request);
    const { sessionId } = validate(Params, request.params);
    const session = await findMerchantSession(context.db, merchantId, sessionId);
    if (!session) throw notFound(`Payment session ${sessionId}`);
    return sessionView(context.config.baseUrl, session, context.now());
  });
}
