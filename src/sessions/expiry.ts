import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';
import { purgeExpiredIdempotencyKeys } from './idempotency.ts';
import { expireSession, findDueForExpiry } from './sessions.ts';

const BATCH = 500;

/**
 * Turns open TRANSIENT sessions past their deadline into EXPIRED, each with one conditional update
 * in its own transaction together with its `session.expired` event. A session with a payment in
 * progress is left alone until that payment is resolved; any number of sweepers may run at once,
 * since only the one whose update matched the row writes the event. Returns the sessions expired.
 */
export async function expireDueSessions(context: Pick<AppContext, 'db' | 'webhookWake'>, now: number, explorerTxUrl: string): Promise<string[]> {
  const { db } = context;
  const expired: string[] = [];
  for (;;) {
    const due = await findDueForExpiry(db, now, BATCH);
    let changed = 0;
    for (const id of due) {
      const done = await db.transaction().execute(async (trx) => {
        const session = await expireSession(trx, id, now);
        if (!session) return false;
        await enqueueWebhookEvent(trx, { type: 'session.expired', session, occurredAt: now, explorerTxUrl });
        return true;
      });
      if (done) {
        expired.push(id);
        changed++;
      }
    }
    if (changed > 0) context.webhookWake.notify();
    // A full batch of which none changed means other sweepers are on it; they finish the rest.
    if (due.length < BATCH || changed === 0) return expired;
  }
}

export type ExpirySweeper = { stop(): Promise<void>; sweep(): Promise<string[]> };

/** Other rows that outlive their use and go in the same sweep, e.g. quotes that ran out long ago. */
export type Purge = (db: Db, now: number) => Promise<unknown>;

export function startExpirySweeper(
  context: Pick<AppContext, 'db' | 'webhookWake' | 'config' | 'log' | 'now'>,
  options: { intervalMs?: number; purges?: Purge[] } = {},
): ExpirySweeper {
  const log = context.log.child({ component: 'expiry' });
  let running: Promise<string[]> | undefined;
  const sweep = () => {
    running ??= (async () => {
      const now = context.now();
      const expired = await expireDueSessions(context, now, context.config.explorerTxUrl);
      // The sweep is also where what is no longer needed goes: idempotency keys after 24 h, and
      // whatever the composition root adds (quotes an hour after they ran out).
      for (const purge of [purgeExpiredIdempotencyKeys, ...(options.purges ?? [])]) await purge(context.db, now);
      return expired;
    })()
      .catch((error: unknown) => {
        log.error({ err: error }, 'expiring sessions failed');
        return [];
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void sweep(), options.intervalMs ?? 5000);
  void sweep();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
