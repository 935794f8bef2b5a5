import { randomBytes } from 'node:crypto';
import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import type { KeysetCursor } from '../http/cursor.ts';
import { TEST_EVENT_TYPE, type WebhookEventType } from './event-types.ts';
import { buildTestBody, buildWebhookBody, type WebhookEventInput } from './events.ts';
import { writeEvent } from './outbox.ts';

/**
 * How long the events API is promised to find an event. Nothing deletes webhook events today (they
 * are kept as long as the database); a sweep that ever prunes them must keep this much.
 */
export const EVENT_RETENTION_DAYS = 30;

export const MAX_EVENTS_PAGE_SIZE = 100;

/** An event as the events API shows it: `body` is the exact text every delivery of it carried. */
export type EventView = { id: string; type: string; createdAt: string; paymentSessionId: string | null; body: string };

export type EventFilter = { types?: readonly string[]; createdFrom?: number; createdTo?: number };

export type EventOrder = 'newest' | 'oldest';

const viewOf = (row: { id: string; type: string; created_at: number | bigint; session_id: string | null; body: string }): EventView => ({
  id: row.id,
  type: row.type,
  createdAt: new Date(Number(row.created_at)).toISOString(),
  paymentSessionId: row.session_id,
  body: row.body,
});

/**
 * A merchant's events of `mode` that pass `filter`, newest (or oldest) first, one slice at a time
 * after `after`: keyset paging on (created_at, id) through one index, so a page costs the same at
 * any depth. `next` is the cursor of the following slice, absent on the last one.
 */
export async function pageOfEvents(
  db: Db,
  mode: Mode,
  merchantId: string,
  filter: EventFilter,
  paging: { after?: KeysetCursor | undefined; size: number; order: EventOrder },
): Promise<{ events: EventView[]; next: KeysetCursor | undefined }> {
  const size = Math.min(Math.max(Math.trunc(paging.size), 1), MAX_EVENTS_PAGE_SIZE);
  const { after, order } = paging;
  const direction = order === 'newest' ? 'desc' : 'asc';
  const rows = await db
    .selectFrom('webhook_events')
    .select(['id', 'type', 'created_at', 'session_id', 'body'])
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .$if(filter.types !== undefined, (qb) => qb.where('type', 'in', [...filter.types!]))
    .$if(filter.createdFrom !== undefined, (qb) => qb.where('created_at', '>=', filter.createdFrom!))
    .$if(filter.createdTo !== undefined, (qb) => qb.where('created_at', '<', filter.createdTo!))
    .$if(after !== undefined, (qb) =>
      qb.where((eb) => eb(eb.refTuple('created_at', 'id'), order === 'newest' ? '<' : '>', eb.tuple(after!.createdAt, after!.id))),
    )
    .orderBy('created_at', direction)
    .orderBy('id', direction)
    .limit(size + 1)
    .execute();
  const page = rows.slice(0, size);
  const last = page.at(-1);
  return { events: page.map(viewOf), next: rows.length > size && last ? { createdAt: Number(last.created_at), id: last.id } : undefined };
}

/** One event of the merchant in `mode`; none for another merchant's or the other mode's. */
export async function findEvent(db: Db, mode: Mode, merchantId: string, eventId: string): Promise<EventView | undefined> {
  const row = await db
    .selectFrom('webhook_events')
    .select(['id', 'type', 'created_at', 'session_id', 'body'])
    .where('id', '=', eventId)
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .executeTakeFirst();
  return row && viewOf(row);
}

const fakeHex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * What an event of `type` would be about, made up: a session, its payment and a refund with fresh
 * fake ids each time (receivers deduplicate by session and order), one US dollar.
 */
function sampleInput(type: WebhookEventType, now: number, chain: Pick<WebhookEventInput, 'explorerTxUrl' | 'network'>): WebhookEventInput {
  const tag = fakeHex(8);
  const session = {
    id: `ps_test_${tag}`,
    merchant_id: '',
    order_id: `test-order-${tag}`,
    amount_minor: 100n,
    currency: 'USD',
    success_url: null,
    fail_url: null,
    cancel_url: null,
    mode: 'sandbox' as const,
  };
  const payment = {
    id: `pay_test_${tag}`,
    amount_minor: 100n,
    currency: 'USD',
    public_order_id: `TX-${fakeHex(16).toUpperCase()}`,
    tx_hash: `0x${fakeHex(32)}`,
  };
  const refund = {
    id: `rf_test_${tag}`,
    amount_minor: 100n,
    currency: 'USD',
    reason: 'Test refund',
    tokenAmount: '1.00',
    tx_hash: type === 'refund.succeeded' ? `0x${fakeHex(32)}` : null,
    last_error: type === 'refund.failed' ? 'authorization_expired' : null,
  };
  return {
    type,
    session,
    ...(type === 'session.expired' ? {} : { payment: { ...payment, tx_hash: type === 'payment.succeeded' ? payment.tx_hash : null } }),
    ...(type.startsWith('refund.') ? { refund } : {}),
    occurredAt: now,
    ...chain,
  };
}

/**
 * A test-mode event of `type` with made-up values, in the shape of a real one, for trying a receiver:
 * listed by the events API (so `till listen` forwards it) and delivered to the endpoint of test mode
 * when it is subscribed to the type (a `webhook.test` whatever the subscription), as a real one would be.
 */
export async function triggerTestEvent(
  db: Db,
  merchantId: string,
  type: WebhookEventType | typeof TEST_EVENT_TYPE,
  now: number,
  chain: Pick<WebhookEventInput, 'explorerTxUrl' | 'network'>,
): Promise<{ event: EventView; deliveryId: string | null }> {
  const eventId = newId('evt_');
  const test = type === TEST_EVENT_TYPE;
  const input = test ? undefined : sampleInput(type, now, chain);
  const body = input ? buildWebhookBody(eventId, input) : buildTestBody(eventId, now);
  const written = await db
    .transaction()
    .execute((trx) =>
      writeEvent(trx, { eventId, merchantId, type, sessionId: input?.session.id ?? null, paymentId: null, body, occurredAt: now, mode: 'sandbox' }, test),
    );
  const event = await findEvent(db, 'sandbox', merchantId, written.eventId);
  return { event: event!, deliveryId: written.deliveryId };
}
