import { sql } from 'kysely';
import type { Db } from '../db/index.ts';

/**
 * Sign-in failures are counted per subject — the email typed (whether a user has it or not) and
 * the client's IP. The first few failures cost nothing; then each one makes the subject wait a
 * doubling delay, up to `slowdownMaxMs`; at `lockAfter` failures the subject is locked for
 * `lockMs`. The count starts again once a subject has had no failure for `forgetAfterMs`.
 */
export type ThrottlePolicy = { freeFailures: number; slowdownMaxMs: number; lockAfter: number; lockMs: number; forgetAfterMs: number };

export const EMAIL_POLICY: ThrottlePolicy = { freeFailures: 3, slowdownMaxMs: 30_000, lockAfter: 10, lockMs: 15 * 60_000, forgetAfterMs: 60 * 60_000 };
export const IP_POLICY: ThrottlePolicy = { freeFailures: 20, slowdownMaxMs: 30_000, lockAfter: 100, lockMs: 15 * 60_000, forgetAfterMs: 60 * 60_000 };

export type Subject = { key: string; policy: ThrottlePolicy };

export const emailSubject = (email: string): Subject => ({ key: `email:${email}`, policy: EMAIL_POLICY });
export const ipSubject = (ip: string): Subject => ({ key: `ip:${ip}`, policy: IP_POLICY });

/** Milliseconds the longest-waiting subject must still wait before its next attempt; 0 when none. */
export async function waitBeforeAttempt(db: Db, subjects: Subject[], now: number): Promise<number> {
  const rows = await db
    .selectFrom('sign_in_throttle')
    .select(['next_attempt_at'])
    .where(
      'subject',
      'in',
      subjects.map((s) => s.key),
    )
    .execute();
  return Math.max(0, ...rows.map((row) => Number(row.next_attempt_at) - now));
}

/** The wait after the n-th failure of a window. */
export function delayAfter(failures: number, policy: ThrottlePolicy): number {
  if (failures >= policy.lockAfter) return policy.lockMs;
  if (failures <= policy.freeFailures) return 0;
  return Math.min(1000 * 2 ** (failures - policy.freeFailures - 1), policy.slowdownMaxMs);
}

/**
 * Counts a failure of each subject with one atomic upsert (a count forgotten starts again at 1), so
 * failures racing on several instances are each counted; then sets the wait the new count earns.
 */
export async function recordFailure(db: Db, subjects: Subject[], now: number): Promise<void> {
  for (const { key, policy } of subjects) {
    const forgotten = sql<boolean>`sign_in_throttle.last_failure_at <= ${now - policy.forgetAfterMs} and sign_in_throttle.next_attempt_at <= ${now}`;
    const { failures } = await db
      .insertInto('sign_in_throttle')
      .values({ subject: key, failures: 1, last_failure_at: now, next_attempt_at: now + delayAfter(1, policy) })
      .onConflict((oc) =>
        oc.column('subject').doUpdateSet({
          failures: sql`case when ${forgotten} then 1 else sign_in_throttle.failures + 1 end`,
          last_failure_at: now,
        }),
      )
      .returning('failures')
      .executeTakeFirstOrThrow();
    if (failures > 1) {
      await db
        .updateTable('sign_in_throttle')
        .set({ next_attempt_at: now + delayAfter(failures, policy) })
        .where('subject', '=', key)
        .where('failures', '=', failures)
        .execute();
    }
  }
}

/** A successful sign-in clears its email's count (not its IP's). */
export async function clearFailures(db: Db, subject: Subject): Promise<void> {
  await db.deleteFrom('sign_in_throttle').where('subject', '=', subject.key).execute();
}

/** Counts that would be forgotten at the next failure anyway, removed by the periodic sweep. */
export async function purgeForgottenFailures(db: Db, now: number): Promise<number> {
  const forgetAfter = Math.max(EMAIL_POLICY.forgetAfterMs, IP_POLICY.forgetAfterMs);
  const result = await db
    .deleteFrom('sign_in_throttle')
    .where('last_failure_at', '<', now - forgetAfter)
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
