import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { invalidField } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { SessionStatus } from '../db/schema.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { sessionDetails } from './details.ts';
import { SessionList, SessionListQuery } from './schemas.ts';
import { pageOfSessions, parseSessionsCursor, type SessionCondition, type SessionsCursor, sessionsCursorText, showsStatus } from './sessions.ts';

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/payment_session',
  operationId: 'listPaymentSessions',
  tag: 'Payment sessions',
  summary: 'List payment sessions',
  description:
    'The merchant’s sessions, newest first, filtered by status, orderId and creation time, a page at a time: pass `nextCursor` as `cursor` for the next page. Each session is as the read of one answers it.',
  security: 'apiKey',
  query: SessionListQuery,
  responses: {
    200: { description: 'A page of sessions', schema: SessionList },
    400: { description: 'A query parameter is unknown, repeated or invalid; `error.field` names it', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
  },
};

/** The cursor as it travels: opaque (base64url of the last session's creation time and id). */
const encodeCursor = (cursor: SessionsCursor) => Buffer.from(sessionsCursorText(cursor)).toString('base64url');

function decodeCursor(text: string): SessionsCursor {
  const cursor = /^[A-Za-z0-9_-]+$/.test(text) ? parseSessionsCursor(Buffer.from(text, 'base64url').toString('utf8')) : undefined;
  // Only a cursor this list gave: one that decodes leniently to the same place is refused too.
  if (!cursor || encodeCursor(cursor) !== text) throw invalidField('cursor', 'is not a cursor this list gave');
  return cursor;
}

/** The filters of a query as one condition on the merchant's sessions; none when there is no filter. */
function conditionOf(query: z.output<typeof SessionListQuery>, now: number): SessionCondition | undefined {
  const { status, orderId } = query;
  const createdFrom = query.createdFrom === undefined ? undefined : Date.parse(query.createdFrom);
  const createdTo = query.createdTo === undefined ? undefined : Date.parse(query.createdTo);
  if (createdFrom !== undefined && createdTo !== undefined && createdTo <= createdFrom) throw invalidField('createdTo', 'must be after createdFrom');
  if (status === undefined && orderId === undefined && createdFrom === undefined && createdTo === undefined) return undefined;
  return (eb) =>
    eb.and([
      ...(status === undefined ? [] : [eb.or((status.split(',') as SessionStatus[]).map((one) => showsStatus(eb, one, now)))]),
      ...(orderId === undefined ? [] : [eb('order_id', '=', orderId)]),
      ...(createdFrom === undefined ? [] : [eb('created_at', '>=', createdFrom)]),
      ...(createdTo === undefined ? [] : [eb('created_at', '<', createdTo)]),
    ]);
}

export function registerListSessions(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const given = (request.query ?? {}) as Record<string, unknown>;
    const repeated = Object.keys(SessionListQuery.shape).find((name) => Array.isArray(given[name]));
    if (repeated) throw invalidField(repeated, `must be given once${repeated === 'status' ? '; several statuses are comma-separated' : ''}`);
    const query = validate(SessionListQuery, given);
    // One clock for the filter and the view: a session listed as OPEN is shown OPEN.
    const now = context.now();
    const page = await pageOfSessions(context.db, mode, merchantId, conditionOf(query, now), {
      after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
      size: query.limit,
    });
    return { sessions: await sessionDetails(context, page.sessions, now), nextCursor: page.next ? encodeCursor(page.next) : null };
  });
}
