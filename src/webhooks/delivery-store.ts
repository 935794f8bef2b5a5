import { sql } from 'kysely';
import { newId } from '../common/ids.ts';
import { openSecret, type SealedWebhookColumn, webhookSecretBinding } from '../common/secrets.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import type { AttemptOutcome, WebhookMessage } from './deliver.ts';
import { disableWebhook } from './endpoints.ts';
import type { AttemptDecision } from './retry.ts';

/** A delivery leased to one worker; its attempt number is the fencing token its result is recorded under. */
/** `mode`: the event's, and so its endpoint's. */
export type LeasedDelivery = { id: string; attempt: number; merchantId: string; eventId: string; url: string; mode: Mode };
/** A leased delivery with what is sent: the frozen body, and the endpoint's key and signing secret. */
export type ClaimedDelivery = LeasedDelivery & { message: WebhookMessage };
/** A leased delivery whose message could not be put together (its endpoint's sealed secrets do not open). */
export type UnreadableDelivery = { delivery: LeasedDelivery; error: unknown };
export type FinishedAttempt = { claimed: LeasedDelivery; outcome: AttemptOutcome; decision: AttemptDecision };
export type UnrecordedAttempt = { finished: FinishedAttempt; error: unknown };

export type DeliveryStore = {
  /**
   * Leases up to `limit` due deliveries of the served modes, each to its merchant's enabled endpoint of its event's mode,
   * under its next attempt number; never one of `held` (the caller's own, whose result is still on its way).
   */
  claimDue(limit: number, held: ReadonlySet<string>): Promise<{ ready: ClaimedDelivery[]; unreadable: UnreadableDelivery[] }>;
  /**
   * Records finished attempts, in one transaction when it can; returns those whose lease still held,
   * and those that could not be recorded (they stay leased and are tried again once the lease ends).
   */
  record(finished: FinishedAttempt[]): Promise<{ recorded: FinishedAttempt[]; unrecorded: UnrecordedAttempt[] }>;
};

/** The lease, attempt and retry state of `webhook_deliveries`, and every write of `webhook_attempts`. */
export function createDeliveryStore(context: Pick<AppContext, 'db' | 'dbKind' | 'config'>, leaseMs: number): DeliveryStore {
  const { db, dbKind } = context;
  const { secretKey } = context.config;
  return {
    async claimDue(limit, held) {
      const leased = await leaseDue(db, dbKind === 'postgres', context.config.modes, limit, leaseMs, Date.now(), held);
      return leased.size === 0 ? { ready: [], unreadable: [] } : loadMessages(db, secretKey, context.config.modes, leased);
    },
    async record(finished) {
      const now = Date.now();
      try {
        const recorded = await db.transaction().execute(async (trx) => {
          const kept: FinishedAttempt[] = [];
          for (const attempt of finished) if (await recordAttempt(trx, attempt, now)) kept.push(attempt);
          return kept;
        });
        return { recorded, unrecorded: [] };
      } catch {
        // One attempt may be what failed the batch: each alone, so the others are kept.
        const recorded: FinishedAttempt[] = [];
        const unrecorded: UnrecordedAttempt[] = [];
        for (const attempt of finished) {
          try {
            if (await db.transaction().execute((trx) => recordAttempt(trx, attempt, now))) recorded.push(attempt);
          } catch (error) {
            unrecorded.push({ finished: attempt, error });
          }
        }
        return { recorded, unrecorded };
      }
    },
  };
}

/**
 * One short statement that takes the next attempt number and a lease, so the POST happens after it
 * has committed. The outer conditions repeat the inner ones: on SQLite they make the update a
 * compare-and-set, on PostgreSQL SKIP LOCKED keeps concurrent workers off the same rows. Only
 * deliveries of events of a served mode to the merchant's endpoint of that same mode are leased:
 * nothing of one mode is ever sent to an endpoint of the other, nor by a deployment that does not serve it.
 * A delivery in `held` is left alone even once its lease has run out: taking it again would raise
 * its attempt number, so the result already on its way would be dropped and the event sent twice.
 */
async function leaseDue(
  db: Db,
  skipLocked: boolean,
  modes: readonly Mode[],
  limit: number,
  leaseMs: number,
  now: number,
  held: ReadonlySet<string>,
): Promise<Map<string, number>> {
  const lock = skipLocked ? sql`FOR UPDATE OF d SKIP LOCKED` : sql``;
  const notHeld = held.size > 0 ? sql`AND d.id NOT IN (${sql.join([...held])})` : sql``;
  const leased = await sql<{ id: string; attempts: number }>`
    UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = ${now + leaseMs}, updated_at = ${now}
    WHERE id IN (
      SELECT d.id FROM webhook_deliveries d
      WHERE d.status = 'PENDING' AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until < ${now})
        AND EXISTS (
          SELECT 1 FROM webhook_events ev JOIN webhook_endpoints e ON e.merchant_id = d.merchant_id AND e.mode = ev.mode
          WHERE ev.id = d.event_id AND ev.mode IN (${sql.join([...modes])}) AND e.disabled_at IS NULL) ${notHeld}
      ORDER BY d.next_attempt_at LIMIT ${limit} ${lock})
    AND status = 'PENDING' AND (lease_until IS NULL OR lease_until < ${now})
    RETURNING id, attempts`.execute(db);
  return new Map(leased.rows.map((row) => [row.id, Number(row.attempts)]));
}

/**
 * The frozen body and the endpoint's current URL and secrets of each leased delivery. A delivery
 * whose secrets do not open is answered apart, so it never holds up the others.
 */
async function loadMessages(
  db: Db,
  secretKey: Buffer,
  modes: readonly Mode[],
  attemptOf: Map<string, number>,
): Promise<{ ready: ClaimedDelivery[]; unreadable: UnreadableDelivery[] }> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .innerJoin('webhook_endpoints as e', (join) => join.onRef('e.merchant_id', '=', 'd.merchant_id').onRef('e.mode', '=', 'ev.mode'))
    .select([
      'd.id',
      'd.merchant_id',
      'ev.mode',
      'ev.id as event_id',
      'ev.body',
      'e.url',
      'e.webhook_key_sealed',
      'e.signing_secret_sealed',
      'e.previous_signing_secret_sealed',
      'e.previous_signing_secret_expires_at',
    ])
    .where('d.id', 'in', [...attemptOf.keys()])
    .where('ev.mode', 'in', modes)
    .execute();
  const ready: ClaimedDelivery[] = [];
  const unreadable: UnreadableDelivery[] = [];
  const now = Date.now();
  // Deliveries to one endpoint share its sealed secrets: each is opened once per claim, not once per delivery.
  const opened = new Map<string, string>();
  const open = (sealed: string, merchantId: string, column: SealedWebhookColumn, mode: Mode) => {
    const binding = webhookSecretBinding(merchantId, column, mode);
    const key = `${binding}\n${sealed}`;
    let plaintext = opened.get(key);
    if (plaintext === undefined) {
      plaintext = openSecret(sealed, secretKey, binding);
      opened.set(key, plaintext);
    }
    return plaintext;
  };
  for (const row of rows) {
    const delivery: LeasedDelivery = {
      id: row.id,
      attempt: attemptOf.get(row.id)!,
      merchantId: row.merchant_id,
      eventId: row.event_id,
      url: row.url,
      mode: row.mode,
    };
    try {
      const message: WebhookMessage = {
        url: row.url,
        eventId: row.event_id,
        body: row.body,
        webhookKey: open(row.webhook_key_sealed, row.merchant_id, 'webhook_key_sealed', row.mode),
        signingSecret: open(row.signing_secret_sealed, row.merchant_id, 'signing_secret_sealed', row.mode),
        // Within the overlap after a rotation, the previous secret signs too.
        ...(row.previous_signing_secret_sealed !== null && Number(row.previous_signing_secret_expires_at) > now
          ? { previousSigningSecret: open(row.previous_signing_secret_sealed, row.merchant_id, 'previous_signing_secret_sealed', row.mode) }
          : {}),
      };
      ready.push({ ...delivery, message });
    } catch (error) {
      unreadable.push({ delivery, error });
    }
  }
  return { ready, unreadable };
}

/** PostgreSQL stores no NUL in text; a receiver's answer may hold one. Shown as U+FFFD on both engines. */
const storable = (text: string | null) => text?.replaceAll('\u0000', '\uFFFD') ?? null;

async function recordAttempt(trx: Db, finished: FinishedAttempt, now: number): Promise<boolean> {
  if (!(await settleIfStillLeased(trx, finished, now))) return false;
  const { claimed, outcome, decision } = finished;
  await trx
    .insertInto('webhook_attempts')
    .values({
      id: newId('wha_'),
      delivery_id: claimed.id,
      attempt: claimed.attempt,
      started_at: outcome.startedAt,
      status_code: outcome.statusCode,
      error: storable(outcome.error),
      latency_ms: outcome.latencyMs,
      response_excerpt: storable(outcome.responseExcerpt),
    })
    .execute();
  if (decision.status === 'FAILED' && decision.disableEndpoint)
    await disableWebhook(trx, claimed.merchantId, claimed.mode, `${claimed.url} answered 410 Gone`, now);
  return true;
}

/**
 * Ends the lease with the decision (delivered, due again later, or failed), but only while the
 * delivery is still PENDING under this attempt number: a worker whose lease ran out and was claimed
 * again by another changes nothing.
 */
async function settleIfStillLeased(trx: Db, { claimed, outcome, decision }: FinishedAttempt, now: number): Promise<boolean> {
  const settled = await trx
    .updateTable('webhook_deliveries')
    .set({
      status: decision.status,
      lease_until: null,
      next_attempt_at: decision.status === 'PENDING' ? now + decision.retryInMs : now,
      last_status_code: outcome.statusCode,
      last_error: storable(decision.status === 'FAILED' ? `${outcome.error}; ${decision.reason}` : outcome.error),
      updated_at: now,
      delivered_at: decision.status === 'SUCCEEDED' ? now : null,
    })
    .where('id', '=', claimed.id)
    .where('attempts', '=', claimed.attempt)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
  return settled.numUpdatedRows > 0n;
}
