import type { LookupFunction } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import type { AppContext } from '../context.ts';
import { openSecret } from '../common/secrets.ts';
import { newId } from '../common/ids.ts';
import { disableWebhook } from './endpoints.ts';
import { postWebhook, REQUEST_TIMEOUT_MS, type AttemptOutcome, type WebhookMessage } from './deliver.ts';
import { decideAfterAttempt } from './retry.ts';
import type { WebhookSettings } from './settings.ts';
import { createWebhookAgent } from './ssrf.ts';

export const DELIVERIES_CHANNEL = 'till_webhook_deliveries';

export type FaultPoint = 'after-claim' | 'after-post' | 'before-record';

export type WebhookWorkerOptions = {
  settings?: WebhookSettings;
  /** How long a claim is exclusive; longer than a request's timeout, so a live attempt is never claimed twice. */
  leaseMs?: number;
  requestTimeoutMs?: number;
  pollIntervalMs?: number;
  concurrency?: number;
  /** DNS resolution used by the SSRF guard (tests resolve names to chosen addresses). */
  lookup?: LookupFunction;
  random?: () => number;
  /** Test-only fault injection: called at each point where a crash must lose nothing. */
  faultHook?: (point: FaultPoint) => void;
};

export type WebhookWorker = { stop(): Promise<void>; wake(): void };

type Claimed = { id: string; attempt: number; message: WebhookMessage; merchantId: string };
type Result = { claimed: Claimed; outcome: AttemptOutcome };

type WorkerContext = Pick<AppContext, 'config' | 'db' | 'dbKind' | 'log' | 'metrics' | 'webhookWake'>;

/**
 * Delivers the outbox. Claims due deliveries with a lease in one short statement, POSTs after it
 * has committed, and records each result only while the claim still holds (the attempt number is
 * the fencing token). Wakes on `wake()`, on in-process enqueues, on PostgreSQL NOTIFY, and by polling.
 */
export function startWebhookWorker(context: WorkerContext, options: WebhookWorkerOptions = {}): WebhookWorker {
  const { db, dbKind, config } = context;
  const log = context.log.child({ component: 'webhooks' });
  const settings = options.settings ?? config.webhooks;
  const requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const leaseMs = options.leaseMs ?? requestTimeoutMs * 4;
  if (leaseMs <= requestTimeoutMs) throw new Error('leaseMs must exceed requestTimeoutMs');
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const concurrency = options.concurrency ?? 64;
  const random = options.random ?? Math.random;
  const fault = options.faultHook ?? (() => {});
  const agent = createWebhookAgent({ ...settings, ...(options.lookup ? { lookup: options.lookup } : {}) });

  let stopped = false;
  let inFlight = 0;
  let claiming = false;
  let claimAgain = false;
  const pending: Result[] = [];
  let flushing: Promise<void> | undefined;
  const posting = new Set<Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();

  async function claim(limit: number): Promise<Claimed[]> {
    const now = Date.now();
    const lock = dbKind === 'postgres' ? sql`FOR UPDATE OF d SKIP LOCKED` : sql``;
    const claimed = await sql<{ id: string; attempts: number }>`
      UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = ${now + leaseMs}, updated_at = ${now}
      WHERE id IN (
        SELECT d.id FROM webhook_deliveries d
        WHERE d.status = 'PENDING' AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until < ${now})
          AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.merchant_id = d.merchant_id AND e.disabled_at IS NULL)
        ORDER BY d.next_attempt_at LIMIT ${limit} ${lock})
      AND status = 'PENDING' AND (lease_until IS NULL OR lease_until < ${now})
      RETURNING id, attempts`.execute(db);
    if (claimed.rows.length === 0) return [];
    const attemptOf = new Map(claimed.rows.map((r) => [r.id, Number(r.attempts)]));
    const rows = await db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
      .innerJoin('webhook_endpoints as e', 'e.merchant_id', 'd.merchant_id')
      .select(['d.id', 'd.merchant_id', 'ev.id as event_id', 'ev.body', 'e.url', 'e.webhook_key_sealed', 'e.signing_secret_sealed'])
      .where('d.id', 'in', [...attemptOf.keys()])
      .execute();
    return rows.map((row) => ({
      id: row.id,
      attempt: attemptOf.get(row.id)!,
      merchantId: row.merchant_id,
      message: {
        url: row.url,
        eventId: row.event_id,
        body: row.body,
        webhookKey: openSecret(row.webhook_key_sealed, config.secretKey),
        signingSecret: openSecret(row.signing_secret_sealed, config.secretKey),
      },
    }));
  }

  async function record(results: Result[]): Promise<void> {
    fault('before-record');
    const now = Date.now();
    const retries: number[] = [];
    await db.transaction().execute(async (trx) => {
      for (const { claimed, outcome } of results) {
        const decision = decideAfterAttempt(outcome, claimed.attempt, settings.retrySchedule, random);
        const held = await trx
          .updateTable('webhook_deliveries')
          .set({
            status: decision.status,
            lease_until: null,
            next_attempt_at: decision.status === 'PENDING' ? now + decision.retryInMs : now,
            last_status_code: outcome.statusCode,
            last_error: decision.status === 'FAILED' ? `${outcome.error}; ${decision.reason}` : outcome.error,
            updated_at: now,
            delivered_at: decision.status === 'SUCCEEDED' ? now : null,
          })
          .where('id', '=', claimed.id)
          .where('attempts', '=', claimed.attempt)
          .where('status', '=', 'PENDING')
          .executeTakeFirst();
        if (held.numUpdatedRows === 0n) continue;
        await trx
          .insertInto('webhook_attempts')
          .values({ id: newId('wha_'), delivery_id: claimed.id, attempt: claimed.attempt, started_at: outcome.startedAt, status_code: outcome.statusCode, error: outcome.error, latency_ms: outcome.latencyMs, response_excerpt: outcome.responseExcerpt })
          .execute();
        if (decision.status === 'FAILED' && decision.disableEndpoint) await disableWebhook(trx, claimed.merchantId, `${claimed.message.url} answered 410 Gone`, now);
        if (decision.status === 'PENDING') retries.push(decision.retryInMs);
        context.metrics.webhookAttempts.inc({ outcome: decision.status === 'SUCCEEDED' ? 'delivered' : decision.status === 'PENDING' ? 'retry' : 'failed' });
      }
    });
    // A retry sooner than the next poll is woken for exactly.
    for (const delay of retries) if (delay < pollIntervalMs) wakeAfter(delay);
  }

  function flush(): void {
    if (flushing) return;
    flushing = (async () => {
      while (pending.length > 0) {
        const batch = pending.splice(0);
        try {
          await record(batch);
        } catch (error) {
          // Unrecorded attempts stay leased and are retried once the lease ends.
          log.error({ err: error }, 'recording webhook attempts failed');
        }
      }
    })().finally(() => {
      flushing = undefined;
      void pump();
    });
  }

  async function deliver(claimed: Claimed): Promise<void> {
    const outcome = await postWebhook(agent, claimed.message, requestTimeoutMs);
    if (outcome.refused) {
      // Nothing reached the receiver; the operator must hear why, not find a silent retry later.
      log.warn({ merchantId: claimed.merchantId, deliveryId: claimed.id, eventId: claimed.message.eventId, host: new URL(claimed.message.url).host, attempt: claimed.attempt, reason: outcome.error }, 'webhook delivery refused');
    }
    fault('after-post');
    pending.push({ claimed, outcome });
    inFlight--;
    flush();
  }

  async function pump(): Promise<void> {
    if (stopped) return;
    if (claiming) {
      claimAgain = true;
      return;
    }
    claiming = true;
    try {
      do {
        claimAgain = false;
        const room = concurrency - inFlight;
        if (room <= 0) break;
        const claimed = await claim(room);
        if (claimed.length > 0) fault('after-claim');
        if (claimed.length === room) claimAgain = true;
        for (const item of claimed) {
          inFlight++;
          const task = deliver(item);
          posting.add(task);
          void task.finally(() => posting.delete(task));
        }
      } while (claimAgain && !stopped);
    } catch (error) {
      log.error({ err: error }, 'claiming webhook deliveries failed');
    } finally {
      claiming = false;
    }
  }

  function wakeAfter(delay: number): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      void pump();
    }, delay);
    timers.add(timer);
  }

  const wake = () => void pump();
  const unregister = context.webhookWake.subscribe(wake);
  const poll = setInterval(wake, pollIntervalMs);

  let listener: pg.Client | undefined;
  async function listen(): Promise<void> {
    if (stopped || dbKind !== 'postgres') return;
    const client = new pg.Client({ connectionString: config.databaseUrl });
    listener = client;
    const retry = () => {
      if (listener !== client) return;
      listener = undefined;
      void client.end().catch(() => {});
      if (!stopped) setTimeout(() => void listen(), pollIntervalMs).unref();
    };
    client.on('notification', wake);
    client.on('error', retry);
    client.on('end', retry);
    try {
      await client.connect();
      await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
    } catch (error) {
      log.warn({ err: error }, 'listening for webhook notifications failed; polling until it is back');
      retry();
    }
  }
  void listen();
  wake();

  return {
    wake,
    async stop() {
      stopped = true;
      clearInterval(poll);
      for (const timer of timers) clearTimeout(timer);
      unregister();
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
      while (claiming || posting.size > 0 || flushing) {
        await Promise.all([...posting]);
        await flushing;
        if (claiming) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await agent.close();
    },
  };
}
