import type { Db } from '../db/index.ts';
import { newId } from '../common/ids.ts';
import { CHAIN, TEST_EVENT_TYPE, TOKEN, insertDelivery, writeEvent, type WebhookBody } from './events.ts';

export type DeliveryView = {
  deliveryId: string;
  eventId: string;
  merchantId: string;
  event: string;
  paymentSessionId: string | null;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  attempts: { attempt: number; at: string; statusCode: number | null; error: string | null; latencyMs: number; response: string | null }[];
  nextAttemptAt: string | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
};

const iso = (ms: number) => new Date(ms).toISOString();

/** Deliveries, newest first, each with every attempt recorded. */
export async function listDeliveries(db: Db, filter: { merchantId?: string; eventId?: string; limit?: number; before?: number } = {}): Promise<DeliveryView[]> {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select(['d.id', 'd.event_id', 'd.merchant_id', 'd.status', 'd.next_attempt_at', 'd.last_error', 'd.created_at', 'd.delivered_at', 'ev.type', 'ev.session_id'])
    .orderBy('d.created_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(filter.limit ?? 50);
  if (filter.merchantId) query = query.where('d.merchant_id', '=', filter.merchantId);
  if (filter.eventId) query = query.where('d.event_id', '=', filter.eventId);
  if (filter.before !== undefined) query = query.where('d.created_at', '<', filter.before);
  const rows = await query.execute();
  const attempts = rows.length
    ? await db.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', rows.map((r) => r.id)).orderBy('attempt').execute()
    : [];
  return rows.map((row) => ({
    deliveryId: row.id,
    eventId: row.event_id,
    merchantId: row.merchant_id,
    event: row.type,
    paymentSessionId: row.session_id,
    status: row.status,
    attempts: attempts
      .filter((a) => a.delivery_id === row.id)
      .map((a) => ({ attempt: a.attempt, at: iso(a.started_at), statusCode: a.status_code, error: a.error, latencyMs: a.latency_ms, response: a.response_excerpt })),
    nextAttemptAt: row.status === 'PENDING' ? iso(row.next_attempt_at) : null,
    lastError: row.last_error,
    createdAt: iso(row.created_at),
    deliveredAt: row.delivered_at === null ? null : iso(row.delivered_at),
  }));
}

export type RedeliveryRefusal = 'unknown_event' | 'no_endpoint';

/** Sends an event again, with the same id and frozen body, as a new delivery. */
export async function redeliverEvent(db: Db, eventId: string, merchantId?: string): Promise<{ deliveryId: string } | { refused: RedeliveryRefusal }> {
  let query = db.selectFrom('webhook_events').select(['id', 'merchant_id']).where('id', '=', eventId);
  if (merchantId) query = query.where('merchant_id', '=', merchantId);
  const event = await query.executeTakeFirst();
  if (!event) return { refused: 'unknown_event' };
  const endpoint = await db.selectFrom('webhook_endpoints').select('merchant_id').where('merchant_id', '=', event.merchant_id).executeTakeFirst();
  if (!endpoint) return { refused: 'no_endpoint' };
  return { deliveryId: await insertDelivery(db, event.id, event.merchant_id, Date.now()) };
}

/** A `webhook.test` event with sample values in the shape of every other event, delivered whatever the subscription. */
export async function sendTestEvent(db: Db, merchantId: string, now = Date.now()): Promise<{ eventId: string; deliveryId: string } | { refused: 'no_endpoint' }> {
  const endpoint = await db.selectFrom('webhook_endpoints').select('merchant_id').where('merchant_id', '=', merchantId).executeTakeFirst();
  if (!endpoint) return { refused: 'no_endpoint' };
  const eventId = newId('evt_');
  const body: WebhookBody = {
    id: eventId,
    event: TEST_EVENT_TYPE,
    timestamp: now,
    orderId: 'test-order',
    amount: 1,
    currency: 'USD',
    token: TOKEN,
    successUrl: null,
    failUrl: null,
    cancelUrl: null,
    paymentSessionId: 'ps_test',
    paymentId: null,
    status: 'SUCCESS',
    chain: CHAIN,
    receipts: [],
  };
  const written = await db.transaction().execute((trx) => writeEvent(trx, { eventId, merchantId, type: TEST_EVENT_TYPE, sessionId: null, paymentId: null, body, occurredAt: now }, true));
  return { eventId, deliveryId: written.deliveryId! };
}
