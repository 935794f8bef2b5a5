import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { sessionDetails } from './details.ts';
import { SessionDetails, SessionParams } from './schemas.ts';
import { findMerchantSession } from './sessions.ts';

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session/{sessionId}',
  operationId: 'getPaymentSession',
  tag: 'Payment sessions',
  summary: 'Read a payment session',
  description: 'Status, amounts, expiry and the payments made so far, each with its order id and receipt once settled.',
  security: 'apiKey',
  scope: 'sessions:read',
  params: SessionParams,
  responses: {
    200: { description: 'The session', schema: SessionDetails },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
  },
};

export function registerGetSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const { sessionId } = validate(SessionParams, request.params);
    const session = await findMerchantSession(context.db, mode, merchantId, sessionId);
    if (!session) throw new TillError('not_found', { what: `Payment session ${sessionId}` });
    const [details] = await sessionDetails(context, [session]);
    return details;
  });
}
