import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { PaymentSessionsTable, PaymentsTable } from '../db/schema.ts';
import { newId } from '../common/ids.ts';
import { decimalNumber } from '../money/iso4217.ts';

export const EVENT_TYPES = ['payment.succeeded', 'session.expired', 'payment.pending', 'payment.failed', 'payment.reversed'] as const;
export type WebhookEventType = (typeof EVENT_TYPES)[number];

/**
 * Receivers are told to deduplicate by paymentSessionId or orderId, so by default an endpoint gets
 * only the events that end a session's story; the intermediate ones are opt-in.
 */
export const DEFAULT_EVENTS: readonly WebhookEventType[] = ['payment.succeeded', 'session.expired'];

/** Sent only on request (CLI, API); never subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test';

const STATUS_OF: Record<WebhookEventType, 'PENDING' | 'SUCCESS' | 'FAILED' | 'EXPIRED'> = {
  'payment.pending': 'PENDING',
  'payment.succeeded': 'SUCCESS',
  'payment.failed': 'FAILED',
  // A payment undone by a chain reorganisation: money not received, in the spec's vocabulary FAILED.
  'payment.reversed': 'FAILED',
  'session.expired': 'EXPIRED',
};

export const TOKEN = 'USDC';
export const CHAIN = 'base';

export type WebhookSession = Pick<Selectable<PaymentSessionsTable>, 'id' | 'merchant_id' | 'order_id' | 'amount_minor' | 'currency' | 'success_url' | 'fail_url' | 'cancel_url'>;
export type WebhookPayment = Pick<Selectable<PaymentsTable>, 'id' | 'amount_minor' | 'currency' | 'public_order_id' | 'tx_hash'>;

/** The body of spec part 6, plus the stable event `id` and the order's `paymentId` (TX-…). */
export type WebhookBody = {
  id: string;
  event: string;
  timestamp: number;
  orderId: string | null;
  amount: number;
  currency: string;
  token: string;
  successUrl: string | null;
  failUrl: string | null;
  cancelUrl: string | null;
  paymentSessionId: string;
  paymentId: string | null;
  status: string;
  chain: string;
  receipts: string[];
};

export type WebhookEventInput = {
  type: WebhookEventType;
  session: WebhookSession;
  /** The payment whose status changed; absent for session.expired. */
  payment?: WebhookPayment;
  /** Epoch milliseconds of the status change. */
  occurredAt: number;
  /** Block-explorer URL template with {hash}, as in config.explorerTxUrl. */
  explorerTxUrl: string;
};

export function buildWebhookBody(id: string, input: WebhookEventInput): WebhookBody {
  const { session, payment } = input;
  const amountMinor = payment?.amount_minor ?? session.amount_minor;
  const currency = payment?.currency ?? session.currency;
  return {
    id,
    event: input.type,
    timestamp: input.occurredAt,
    orderId: session.order_id,
    amount: decimalNumber(amountMinor, currency),
    currency,
    token: TOKEN,
    successUrl: session.success_url,
    failUrl: session.fail_url,
    cancelUrl: session.cancel_url,
    paymentSessionId: session.id,
    paymentId: payment?.public_order_id ?? null,
    status: STATUS_OF[input.type],
    chain: CHAIN,
    receipts: payment?.tx_hash ? [input.explorerTxUrl.replace('{hash}', payment.tx_hash)] : [],
  };
}

export function subscribes(events: readonly string[], type: string): boolean {
  return events.includes(type);
}

/**
 * Writes the event, with its frozen body, and a delivery if the merchant's endpoint is subscribed.
 * Call it inside the transaction that changes the status, and `context.webhookWake.notify()` after the commit.
 */
export async function enqueueWebhookEvent(trx: Db, input: WebhookEventInput): Promise<{ eventId: string; deliveryId: string | null }> {
  const eventId = newId('evt_');
  const body = buildWebhookBody(eventId, input);
  return writeEvent(trx, { eventId, merchantId: input.session.merchant_id, type: input.type, sessionId: input.session.id, paymentId: input.payment?.id ?? null, body, occurredAt: input.occurredAt }, false);
}

export async function writeEvent(
  trx: Db,
  event: { eventId: string; merchantId: string; type: string; sessionId: string | null; paymentId: string | null; body: WebhookBody; occurredAt: number },
  deliverAlways: boolean,
): Promise<{ eventId: string; deliveryId: string | null }> {
  const now = Date.now();
  await trx
    .insertInto('webhook_events')
    .values({ id: event.eventId, merchant_id: event.merchantId, type: event.type, session_id: event.sessionId, payment_id: event.paymentId, body: JSON.stringify(event.body), occurred_at: event.occurredAt, created_at: now })
    .execute();
  const endpoint = await trx.selectFrom('webhook_endpoints').select('events').where('merchant_id', '=', event.merchantId).executeTakeFirst();
  if (!endpoint || !(deliverAlways || subscribes(JSON.parse(endpoint.events) as string[], event.type))) return { eventId: event.eventId, deliveryId: null };
  const deliveryId = await insertDelivery(trx, event.eventId, event.merchantId, now);
  return { eventId: event.eventId, deliveryId };
}

export async function insertDelivery(db: Db, eventId: string, merchantId: string, now: number): Promise<string> {
  const id = newId('whd_');
  await db.insertInto('webhook_deliveries').values({ id, event_id: eventId, merchant_id: merchantId, status: 'PENDING', next_attempt_at: now, lease_until: null, last_status_code: null, last_error: null, created_at: now, updated_at: now, delivered_at: null }).execute();
  return id;
}
