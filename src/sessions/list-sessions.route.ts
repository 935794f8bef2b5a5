import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validateQuery } from '../http/validation.ts';
import { listSessions } from './list-sessions.ts';
import { SessionList, SessionListQuery } from './schemas.ts';

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session',
  operationId: 'listPaymentSessions',
  tag: 'Payment sessions',
  summary: 'List payment sessions',
  description:
    'The merchant’s sessions, newest first, filtered by status, orderId and creation time, a page at a time: pass `nextCursor` as `cursor` for the next page. Each session is as the read of one answers it.',
  security: 'apiKey',
  scope: 'sessions:read',
  query: SessionListQuery,
  responses: {
    200: { description: 'A page of sessions', schema: SessionList },
    400: { description: 'A query parameter is unknown, repeated or invalid; `error.field` names it', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
  },
};

export function registerListSessions(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    return listSessions(context, { merchantId, mode }, validateQuery(SessionListQuery, request.query, { status: 'statuses' }));
  });
}
