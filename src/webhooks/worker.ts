import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import { reportRowFailure } from '../common/row-failures.ts';
import { createGuardedAgent } from '../common/ssrf.ts';
import type { WebhookSettings } from '../config.ts';
import type { AppContext } from '../context.ts';
import { type AttemptOutcome, postWebhook, REQUEST_TIMEOUT_MS, webhookTargetAllowance } from './deliver.ts';
import { listenForDeliveries } from './delivery-notifications.ts';
import {
  type ClaimedDelivery,
  createDeliveryStore,
  type DeliveryStore,
  type FinishedAttempt,
  type LeasedDelivery,
  type UnrecordedAttempt,
} from './delivery-store.ts';
import { deliveryRefusal } from './endpoints.ts';
import { type AttemptDecision, decideAfterAttempt } from './retry.ts';

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

type WorkerContext = Pick<AppContext, 'config' | 'db' | 'dbKind' | 'log' | 'metrics' | 'webhookWake'>;
type Tuning = Required<Pick<WebhookWorkerOptions, 'settings' | 'leaseMs' | 'requestTimeoutMs' | 'pollIntervalMs' | 'concurrency' | 'random'>>;
type Posted = { claimed: LeasedDelivery; outcome: AttemptOutcome };

const METRIC_OUTCOME = { SUCCEEDED: 'delivered', PENDING: 'retry', FAILED: 'failed' } as const;

/** The pass name of webhook rows in till_background_row_failures_total. */
const PASS = 'webhook_delivery';

/** What the merchant's delivery log shows for an attempt that could not be sent because of us. */
export const NOT_SENT = 'not sent: the webhook key or signing secret could not be read on our side; the operator sees it in the logs';

const rowOf = (delivery: LeasedDelivery) => ({ deliveryId: delivery.id, merchantId: delivery.merchantId, eventId: delivery.eventId });

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

function tuningOf(context: WorkerContext, options: WebhookWorkerOptions): Tuning {
  const requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const leaseMs = options.leaseMs ?? requestTimeoutMs * 4;
  if (leaseMs <= requestTimeoutMs) throw new RangeError('leaseMs must exceed requestTimeoutMs');
  return {
    settings: options.settings ?? context.config.webhooks,
    leaseMs,
    requestTimeoutMs,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    concurrency: options.concurrency ?? 64,
    random: options.random ?? Math.random,
  };
}

/**
 * Delivers the outbox: claims due deliveries (see the delivery store), POSTs each once its claim has
 * committed, and records the results in batches. Wakes on `wake()`, on in-process enqueues, on
 * PostgreSQL NOTIFY, by polling, and at retries due before the next poll.
 */
export function startWebhookWorker(context: WorkerContext, options: WebhookWorkerOptions = {}): WebhookWorker {
  const tuning = tuningOf(context, options);
  const log = context.log.child({ component: 'webhooks' });
  const fault = options.faultHook ?? (() => {});
  const store = createDeliveryStore(context, tuning.leaseMs);
  const agent = createGuardedAgent({ ...webhookTargetAllowance(tuning.settings), ...(options.lookup ? { lookup: options.lookup } : {}) });

  let stopped = false;
  /** Deliveries this worker leased whose result is not recorded yet: they fill its room, and it never leases them again meanwhile. */
  const held = new Set<string>();
  let claiming = false;
  let claimAgain = false;
  const posting = new Set<Promise<void>>();

  /** Claims while there is room; one claim loop at a time, asked to go round again when woken meanwhile. */
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
        await claimIntoRoom();
      } while (claimAgain && !stopped);
    } catch (error) {
      log.error({ err: error }, 'claiming webhook deliveries failed');
    } finally {
      claiming = false;
    }
  }

  async function claimIntoRoom(): Promise<void> {
    const room = tuning.concurrency - held.size;
    if (room <= 0) return;
    const { ready, unreadable } = await store.claimDue(room, held);
    for (const delivery of ready) held.add(delivery.id);
    for (const { delivery } of unreadable) held.add(delivery.id);
    const claimed = ready.length + unreadable.length;
    if (claimed > 0) fault('after-claim');
    // A full claim may have left due deliveries behind.
    if (claimed === room) claimAgain = true;
    for (const { delivery, error } of unreadable) recordNotSent(delivery, error);
    for (const delivery of ready) {
      const refusal = deliveryRefusal(delivery.url, delivery.mode);
      if (refusal) recordUnsendable(delivery, refusal);
      else startPosting(delivery);
    }
  }

  /**
   * A delivery to a URL nothing may be sent to (an http URL in live mode, saved before that was
   * checked) is not sent, not signed on the wire, and fails at once with the reason in the log the
   * merchant sees; it goes once the URL is fixed and the event redelivered.
   */
  function recordUnsendable(delivery: LeasedDelivery, reason: string): void {
    log.warn({ ...rowOf(delivery), host: hostOf(delivery.url), attempt: delivery.attempt, reason }, 'webhook delivery refused');
    const outcome: AttemptOutcome = {
      startedAt: Date.now(),
      latencyMs: 0,
      statusCode: null,
      error: reason,
      responseExcerpt: null,
      retryAfterMs: null,
      refused: true,
      unsendable: true,
    };
    recorder.add({ claimed: delivery, outcome });
  }

  /**
   * A delivery that cannot be signed is never sent; its attempt is recorded as not sent, so it is
   * retried on the schedule (the operator may fix the key meanwhile) and the merchant sees why.
   */
  function recordNotSent(delivery: LeasedDelivery, error: unknown): void {
    reportRowFailure(
      { log, metrics: context.metrics },
      PASS,
      rowOf(delivery),
      error,
      'a webhook delivery could not be prepared; not sent, retried on the schedule',
    );
    const outcome: AttemptOutcome = {
      startedAt: Date.now(),
      latencyMs: 0,
      statusCode: null,
      error: NOT_SENT,
      responseExcerpt: null,
      retryAfterMs: null,
      refused: false,
    };
    recorder.add({ claimed: delivery, outcome });
  }

  function startPosting(delivery: ClaimedDelivery): void {
    const task = post(delivery);
    posting.add(task);
    void task.finally(() => posting.delete(task));
  }

  async function post(claimed: ClaimedDelivery): Promise<void> {
    try {
      const outcome = await postWebhook(agent, claimed.message, tuning.requestTimeoutMs);
      // Nothing reached the receiver; the operator must hear why, not find a silent retry later.
      if (outcome.refused)
        log.warn(
          {
            ...rowOf(claimed),
            host: new URL(claimed.url).host,
            attempt: claimed.attempt,
            reason: outcome.error,
          },
          'webhook delivery refused',
        );
      fault('after-post');
      recorder.add({ claimed, outcome });
    } catch (error) {
      // Left leased: claimed again once the lease ends.
      held.delete(claimed.id);
      reportRowFailure({ log, metrics: context.metrics }, PASS, rowOf(claimed), error, 'a webhook delivery failed before its attempt was recorded');
    }
  }

  /** Until nothing is claiming, posting or recording; nothing new starts once stopped. */
  async function drain(): Promise<void> {
    while (claiming || posting.size > 0 || recorder.busy()) {
      await Promise.all([...posting]);
      await recorder.busy();
      if (claiming) await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  const wake = () => void pump();
  const waking = startWaking(context, tuning.pollIntervalMs, log, wake);
  const recorder = createAttemptRecorder(store, tuning, {
    log,
    fault,
    unrecorded({ finished, error }) {
      reportRowFailure(
        { log, metrics: context.metrics },
        PASS,
        rowOf(finished.claimed),
        error,
        'a webhook attempt could not be recorded; the delivery is tried again once its lease ends',
      );
    },
    done(deliveryId) {
      held.delete(deliveryId);
    },
    recorded(decision) {
      context.metrics.webhookAttempts.inc({ outcome: METRIC_OUTCOME[decision.status] });
      // A retry sooner than the next poll is woken for exactly.
      if (decision.status === 'PENDING' && decision.retryInMs < tuning.pollIntervalMs) waking.after(decision.retryInMs);
    },
    idle: wake,
  });
  wake();

  return {
    wake,
    async stop() {
      stopped = true;
      await waking.stop();
      await drain();
      await agent.close();
    },
  };
}

type Waking = { after(delayMs: number): void; stop(): Promise<void> };

/** Calls `wake` on in-process enqueues, on PostgreSQL NOTIFY, by polling, and once after each `after(delay)`. */
function startWaking(context: WorkerContext, pollIntervalMs: number, log: Logger, wake: () => void): Waking {
  const unsubscribe = context.webhookWake.subscribe(wake);
  const poll = setInterval(wake, pollIntervalMs);
  const listener = context.dbKind === 'postgres' ? listenForDeliveries(context.config.databaseUrl, wake, { retryMs: pollIntervalMs, log }) : undefined;
  const timers = new Set<NodeJS.Timeout>();
  return {
    after(delayMs) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        wake();
      }, delayMs);
      timers.add(timer);
    },
    async stop() {
      clearInterval(poll);
      for (const timer of timers) clearTimeout(timer);
      unsubscribe();
      await listener?.close();
    },
  };
}

type AttemptRecorder = { add(posted: Posted): void; busy(): Promise<void> | undefined };
type RecorderHooks = {
  log: Logger;
  fault: (point: FaultPoint) => void;
  recorded(decision: AttemptDecision): void;
  unrecorded(attempt: UnrecordedAttempt): void;
  /** The delivery's result is recorded, or given up on (then it is leased again once its lease ends). */
  done(deliveryId: string): void;
  idle(): void;
};

/** Records posted attempts with their retry decision, in batches, one batch at a time; `idle` once the queue is empty. */
function createAttemptRecorder(store: DeliveryStore, tuning: Tuning, hooks: RecorderHooks): AttemptRecorder {
  const queue: Posted[] = [];
  let recording: Promise<void> | undefined;
  const decide = ({ claimed, outcome }: Posted): FinishedAttempt => ({
    claimed,
    outcome,
    decision: decideAfterAttempt(outcome, claimed.attempt, tuning.settings.retrySchedule, tuning.random),
  });

  async function recordBatch(batch: Posted[]): Promise<void> {
    try {
      hooks.fault('before-record');
      const { recorded, unrecorded } = await store.record(batch.map(decide));
      for (const { decision } of recorded) hooks.recorded(decision);
      for (const attempt of unrecorded) hooks.unrecorded(attempt);
    } catch (error) {
      // Unrecorded attempts stay leased and are retried once the lease ends.
      hooks.log.error({ err: error }, 'recording webhook attempts failed');
    } finally {
      for (const { claimed } of batch) hooks.done(claimed.id);
    }
  }

  return {
    add(posted) {
      queue.push(posted);
      // Started after the current turn of the event loop, so every attempt whose answer came in the
      // same turn shares one transaction (one commit) instead of one each.
      recording ??= new Promise<void>((resolve) => setImmediate(resolve))
        .then(async () => {
          while (queue.length > 0) await recordBatch(queue.splice(0));
        })
        .finally(() => {
          recording = undefined;
          hooks.idle();
        });
    },
    busy: () => recording,
  };
}
