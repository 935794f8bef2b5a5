import pg from 'pg';
import type { Logger } from 'pino';

/** Notified by a trigger on every insert into webhook_deliveries (migration 0003). */
export const DELIVERIES_CHANNEL = 'till_webhook_deliveries';

export type DeliveryListener = { close(): Promise<void> };

/**
 * Calls `onDelivery` on every NOTIFY of a new delivery, so deliveries queued by another process go
 * out at once. The connection is its own; a lost one is opened again after `retryMs`, and polling
 * covers the gap.
 */
export function listenForDeliveries(databaseUrl: string, onDelivery: () => void, options: { retryMs: number; log: Logger }): DeliveryListener {
  let closed = false;
  let current: pg.Client | undefined;

  function reconnectLater(client: pg.Client): void {
    if (current !== client) return;
    current = undefined;
    void client.end().catch(() => {});
    if (!closed) setTimeout(() => void connect(), options.retryMs).unref();
  }

  async function connect(): Promise<void> {
    if (closed) return;
    const client = new pg.Client({ connectionString: databaseUrl });
    current = client;
    const lost = () => reconnectLater(client);
    client.on('notification', onDelivery);
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
    } catch (error) {
      options.log.warn({ err: error }, 'listening for webhook notifications failed; polling until it is back');
      lost();
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
      const client = current;
      current = undefined;
      await client?.end().catch(() => {});
    },
  };
}
