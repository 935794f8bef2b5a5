import type { Logger } from 'pino';
import { listenForNotifications, type NotificationListener } from '../db/notifications.ts';

/** Notified by a trigger on every insert into webhook_deliveries (migration 0003). */
export const DELIVERIES_CHANNEL = 'till_webhook_deliveries';

export type DeliveryListener = NotificationListener;

/**
 * Calls `onDelivery` on every NOTIFY of a new delivery, so deliveries queued by another process go
 * out at once, and each time the LISTEN is in place: a delivery queued while it was being set up (a
 * worker just started) or while the connection was lost sent a NOTIFY nobody heard, and goes out
 * then instead of at the next poll. A lost connection is opened again after `retryMs`.
 */
export function listenForDeliveries(databaseUrl: string, onDelivery: () => void, options: { retryMs: number; log: Logger }): DeliveryListener {
  return listenForNotifications(
    databaseUrl,
    DELIVERIES_CHANNEL,
    { onNotification: onDelivery, onListening: onDelivery },
    { ...options, what: 'webhook notifications' },
  );
}
