import { TillError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { inTransaction } from '../merchants/events.ts';
import { subscribedEvents } from './endpoints.ts';
import { TEST_EVENT_TYPE } from './event-types.ts';
import { buildTestBody } from './events.ts';
import { queueDelivery, writeEvent } from './outbox.ts';

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

/** Deliveries of events of `mode` (the service's), newest first, each with every attempt recorded. */
export async function listDeliveries(
  db: Db,
  mode: Mode,
  filter: { merchantId?: string; eventId?: string; limit?: number; before?: number } = {},
): Promise<DeliveryView[]> {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select([
      'd.id',
      'd.event_id',
      'd.merchant_id',
      'd.status',
      'd.next_attempt_at',
      'd.last_error',
      'd.created_at',
      'd.delivered_at',
      'ev.type',
      'ev.session_id',
    ])
    .where('ev.mode', '=', mode)
    .orderBy('d.created_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(filter.limit ?? 50);
  if (filter.merchantId) query = query.where('d.merchant_id', '=', filter.merchantId);
  if (filter.eventId) query = query.where('d.event_id', '=', filter.eventId);
  if (filter.before !== undefined) query = query.where('d.created_at', '<', filter.before);
  const rows = await query.execute();
  const attempts = rows.length
    ? await db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where(
          'delivery_id',
          'in',
          rows.map((r) => r.id),
        )
        .orderBy('attempt')
        .execute()
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
      .map((a) => ({
        attempt: a.attempt,
        at: iso(a.started_at),
        statusCode: a.status_code,
        error: a.error,
        latencyMs: a.latency_ms,
        response: a.response_excerpt,
      })),
    nextAttemptAt: row.status === 'PENDING' ? iso(row.next_attempt_at) : null,
    lastError: row.last_error,
    createdAt: iso(row.created_at),
    deliveredAt: row.delivered_at === null ? null : iso(row.delivered_at),
  }));
}

/**
 * Sends an event of `mode` again, with the same id and frozen body, as a new delivery; `merchantId`
 * scopes the lookup. An event of the other mode is not found.
 */
export async function redeliverEvent(db: Db, mode: Mode, eventId: string, merchantId?: string): Promise<{ deliveryId: string }> {
  let query = db.selectFrom('webhook_events').select(['id', 'merchant_id']).where('id', '=', eventId).where('mode', '=', mode);
  if (merchantId) query = query.where('merchant_id', '=', merchantId);
  const event = await query.executeTakeFirst();
  if (!event) throw new TillError('not_found', { what: `Webhook event ${eventId}` });
  await requireEndpoint(db, mode, event.merchant_id);
  return { deliveryId: await queueDelivery(db, event.id, event.merchant_id, Date.now()) };
}

/**
 * A `webhook.test` event of `mode` (the service's) with sample values in the shape of every other
 * event, delivered to the endpoint of that mode whatever the subscription.
 */
export async function sendTestEvent(db: Db, mode: Mode, merchantId: string, now = Date.now()): Promise<{ eventId: string; deliveryId: string }> {
  await requireEndpoint(db, mode, merchantId);
  const eventId = newId('evt_');
  const event = { eventId, merchantId, type: TEST_EVENT_TYPE, sessionId: null, paymentId: null, body: buildTestBody(eventId, now), occurredAt: now, mode };
  const written = await inTransaction(db, (trx) => writeEvent(trx, event, true));
  return { eventId, deliveryId: written.deliveryId! };
}

async function requireEndpoint(db: Db, mode: Mode, merchantId: string): Promise<void> {
  if (!(await subscribedEvents(db, mode, merchantId))) throw new TillError('no_webhook_endpoint');
}
