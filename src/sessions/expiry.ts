import { reportRowFailure } from '../common/row-failures.ts';
import { explorerTxUrlOf, networkOf } from '../config.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';
import { purgeExpiredIdempotencyKeys } from './idempotency.ts';
import { type DueSession, expireSession, findDueForExpiry } from './sessions.ts';

const BATCH = 500;

type SweepContext = Pick<AppContext, 'db' | 'webhookWake' | 'log' | 'metrics'> & { config: Pick<AppContext['config'], 'modes' | 'chains' | 'baseUrl'> };

/**
 * Turns open TRANSIENT sessions of the served modes past their deadline into EXPIRED, each with one conditional update
 * in its own transaction together with its `session.expired` event. A session with a payment in
 * progress is left alone until that payment is resolved; any number of sweepers may run at once,
 * since only the one whose update matched the row writes the event. A session that cannot be
 * expired (its event cannot be written) is rolled back, logged and counted, and the sweep goes on
 * past it, so it never holds up the other sessions. Returns the sessions expired.
 */
export async function expireDueSessions(context: SweepContext, now: number, options: { batchSize?: number } = {}): Promise<string[]> {
  const batchSize = options.batchSize ?? BATCH;
  const expired: string[] = [];
  let after: DueSession | undefined;
  for (;;) {
    const due = await findDueForExpiry(context.db, context.config.modes, now, batchSize, after);
    let changed = 0;
    let failed = 0;
    for (const session of due) {
      const outcome = await expireOne(context, session, now);
      if (outcome === 'expired') {
        expired.push(session.id);
        changed++;
      } else if (outcome === 'failed') failed++;
    }
    if (changed > 0) context.webhookWake.notify();
    // A full batch of which none changed or failed means other sweepers are on it; they finish the rest.
    if (due.length < batchSize || (changed === 0 && failed === 0)) return expired;
    after = due.at(-1);
  }
}

async function expireOne(context: SweepContext, due: DueSession, now: number): Promise<'expired' | 'skipped' | 'failed'> {
  try {
    const done = await context.db.transaction().execute(async (trx) => {
      const session = await expireSession(trx, due.id, now);
      if (!session) return false;
      await enqueueWebhookEvent(trx, {
        type: 'session.expired',
        session,
        occurredAt: now,
        explorerTxUrl: explorerTxUrlOf(context.config, session.mode),
        network: networkOf(context.config, session.mode).v1,
      });
      return true;
    });
    return done ? 'expired' : 'skipped';
  } catch (error) {
    reportRowFailure(
      context,
      'session_expiry',
      { sessionId: due.id, merchantId: due.merchant_id },
      error,
      'could not expire a session; it stays OPEN and is tried again at the next sweep',
    );
    return 'failed';
  }
}

export type ExpirySweeper = { stop(): Promise<void>; sweep(): Promise<string[]> };

/** Other rows that outlive their use and go in the same sweep, e.g. quotes that ran out long ago. */
export type Purge = (db: Db, now: number) => Promise<unknown>;

export function startExpirySweeper(
  context: Pick<AppContext, 'db' | 'webhookWake' | 'config' | 'log' | 'metrics' | 'now'>,
  options: { intervalMs?: number; purges?: Purge[] } = {},
): ExpirySweeper {
  const log = context.log.child({ component: 'expiry' });
  const sweepContext = { ...context, log };
  let running: Promise<string[]> | undefined;
  const sweep = () => {
    running ??= (async () => {
      const now = context.now();
      let expired: string[] = [];
      try {
        expired = await expireDueSessions(sweepContext, now);
      } catch (error) {
        log.error({ err: error }, 'expiring sessions failed');
      }
      // The sweep is also where what is no longer needed goes: idempotency keys after 24 h, and
      // whatever the composition root adds (quotes an hour after they ran out). Each purge stands
      // alone: one that fails is logged and counted, and the others still run.
      for (const purge of [purgeExpiredIdempotencyKeys, ...(options.purges ?? [])]) {
        try {
          await purge(context.db, now);
        } catch (error) {
          const name = purge.name || 'anonymous';
          reportRowFailure(sweepContext, `purge:${name}`, { purge: name }, error, 'a purge failed; the other purges and the expiry of sessions go on');
        }
      }
      return expired;
    })().finally(() => {
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
