import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { subscribedEvents } from './endpoints.ts';

export type OutboxEvent = {
  eventId: string;
  merchantId: string;
  type: string;
  sessionId: string | null;
  paymentId: string | null;
  body: object;
  occurredAt: number;
  /** The mode of the session it is about (of the service, for a test event). */
  mode: Mode;
};

/**
 * Writes the event with its body frozen, and a delivery when the merchant has an endpoint of the
 * event's mode subscribed to the type (or any endpoint of that mode, with `deliverAlways`): an
 * endpoint of the other mode is never queued anything. Call it inside the transaction of the change.
 */
export async function writeEvent(trx: Db, event: OutboxEvent, deliverAlways: boolean): Promise<{ eventId: string; deliveryId: string | null }> {
  const now = Date.now();
  await trx
    .insertInto('webhook_events')
    .values({
      id: event.eventId,
      merchant_id: event.merchantId,
      type: event.type,
      session_id: event.sessionId,
      payment_id: event.paymentId,
      body: JSON.stringify(event.body),
      occurred_at: event.occurredAt,
      created_at: now,
      mode: event.mode,
    })
    .execute();
  const events = await subscribedEvents(trx, event.mode, event.merchantId);
  if (!events || !(deliverAlways || events.some((type) => type === event.type))) return { eventId: event.eventId, deliveryId: null };
  return { eventId: event.eventId, deliveryId: await queueDelivery(trx, event.eventId, event.merchantId, now) };
}

/** A new PENDING delivery of an event, due at once. */
export async function queueDelivery(db: Db, eventId: string, merchantId: string, now: number): Promise<string> {
  const id = newId('whd_');
  await db
    .insertInto('webhook_deliveries')
    .values({
      id,
      event_id: eventId,
      merchant_id: merchantId,
      status: 'PENDING',
      next_attempt_at: now,
      lease_until: null,
      last_status_code: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      delivered_at: null,
    })
    .execute();
  return id;
}
