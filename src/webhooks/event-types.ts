export const EVENT_TYPES = [
  'payment.succeeded',
  'session.expired',
  'payment.pending',
  'payment.failed',
  'payment.reversed',
  'refund.succeeded',
  'refund.failed',
] as const;
export type WebhookEventType = (typeof EVENT_TYPES)[number];

/**
 * Receivers are told to deduplicate by paymentSessionId or orderId, so by default an endpoint gets
 * only the events that end a session's story; the intermediate ones are opt-in.
 */
export const DEFAULT_EVENTS: readonly WebhookEventType[] = ['payment.succeeded', 'session.expired'];

/** Sent only on request (CLI, API); never subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Every type an event may have: the subscribable ones and `webhook.test`. */
export const EVENT_TYPE_NAMES = [...EVENT_TYPES, TEST_EVENT_TYPE] as const;
