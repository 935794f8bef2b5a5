import type { z } from 'zod';
import { invalidField } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { Mode, SessionStatus } from '../db/schema.ts';
import { sessionDetails } from './details.ts';
import type { SessionList, SessionListQuery } from './schemas.ts';
import { pageOfSessions, parseSessionsCursor, type SessionCondition, type SessionsCursor, sessionsCursorText, showsStatus } from './sessions.ts';

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

/**
 * One page of a merchant's sessions of one mode, newest first, filtered: what the list endpoint
 * answers and the MCP tool list_payment_sessions returns. A bad cursor or window is a 400 naming it.
 */
export async function listSessions(
  context: AppContext,
  scope: { merchantId: string; mode: Mode },
  query: z.output<typeof SessionListQuery>,
): Promise<z.output<typeof SessionList>> {
  // One clock for the filter and the view: a session listed as OPEN is shown OPEN.
  const now = context.now();
  const page = await pageOfSessions(context.db, scope.mode, scope.merchantId, conditionOf(query, now), {
    after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    size: query.limit,
  });
  return { sessions: await sessionDetails(context, page.sessions, now), nextCursor: page.next ? encodeCursor(page.next) : null };
}
