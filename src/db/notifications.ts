import pg from 'pg';
import type { Logger } from 'pino';

export type NotificationListener = {
  /**
   * One round trip on the listening connection: resolves once every notification of a transaction
   * committed before the call has been handed to `onNotification` (PostgreSQL signals listeners at
   * commit, before the committer is answered, and a listening session sends what it was signalled
   * before answering its next statement). Rejects while the LISTEN is not in place.
   */
  sync(): Promise<void>;
  close(): Promise<void>;
};

export type NotificationHandlers = {
  /** `processId`: the backend process id of the session that notified (its `pg_backend_pid()`). */
  onNotification(payload: string | undefined, processId: number): void;
  /** The LISTEN is in place: from now on no notification is missed until `onLost`. */
  onListening?(): void;
  /** The connection was lost (or never made): notifications may be missed until the next `onListening`. */
  onLost?(): void;
};

/**
 * LISTEN on one PostgreSQL channel, on a connection of its own. A lost connection is opened again
 * after `retryMs`; whoever listens covers the gap (the webhook worker polls, caches drop what they hold).
 */
export function listenForNotifications(
  databaseUrl: string,
  channel: string,
  handlers: NotificationHandlers,
  options: { retryMs: number; log: Logger; what: string },
): NotificationListener {
  let closed = false;
  let current: pg.Client | undefined;
  let listening: pg.Client | undefined;

  function reconnectLater(client: pg.Client): void {
    if (current !== client) return;
    current = undefined;
    listening = undefined;
    handlers.onLost?.();
    void client.end().catch(() => {});
    if (!closed) setTimeout(() => void connect(), options.retryMs).unref();
  }

  async function connect(): Promise<void> {
    if (closed) return;
    const client = new pg.Client({ connectionString: databaseUrl });
    current = client;
    const lost = () => reconnectLater(client);
    client.on('notification', (message) => handlers.onNotification(message.payload, message.processId));
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
      if (current === client) {
        listening = client;
        handlers.onListening?.();
      }
    } catch (error) {
      options.log.warn({ err: error }, `listening for ${options.what} failed; retrying`);
      lost();
    }
  }

  void connect();
  return {
    async sync() {
      if (!listening) throw new Error(`not listening for ${options.what}`);
      await listening.query('SELECT 1');
    },
    async close() {
      closed = true;
      const client = current;
      current = undefined;
      await client?.end().catch(() => {});
    },
  };
}
