import type { Db } from '../db/index.ts';
import type { AppContext } from '../context.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';
import { purgeOldQuotes } from '../x402/quotes.ts';
import { purgeExpiredIdempotencyKeys } from './idempotency.ts';

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
    const due = await db
      .selectFrom('payment_sessions')
      .select('id')
      .where('status', '=', 'OPEN')
      .where('order_type', '=', 'TRANSIENT')
      .where('expires_at', '<=', now)
      .where('payments_in_progress', '=', 0)
      .orderBy('expires_at')
      .limit(BATCH)
      .execute();
    let changed = 0;
    for (const { id } of due) {
      const done = await db.transaction().execute(async (trx) => {
        const session = await trx
          .updateTable('payment_sessions')
          .set({ status: 'EXPIRED', updated_at: now })
          .where('id', '=', id)
          .where('status', '=', 'OPEN')
          .where('order_type', '=', 'TRANSIENT')
          .where('payments_in_progress', '=', 0)
          .where('expires_at', '<=', now)
          .returningAll()
          .executeTakeFirst();
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

export function startExpirySweeper(context: Pick<AppContext, 'db' | 'webhookWake' | 'config' | 'log' | 'now'>, options: { intervalMs?: number } = {}): ExpirySweeper {
  const log = context.log.child({ component: 'expiry' });
  let running: Promise<string[]> | undefined;
  const sweep = () => {
    running ??= (async () => {
      const now = context.now();
      const expired = await expireDueSessions(context, now, context.config.explorerTxUrl);
      // The sweep is also where what is no longer needed goes: idempotency keys after 24 h, and
      // quotes an hour after they ran out unless a payment points at them.
      await purgeExpiredIdempotencyKeys(context.db, now);
      await purgeOldQuotes(context.db, now);
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
