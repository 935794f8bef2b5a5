import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/index.ts';

/**
 * Password attempts are counted per subject before the password is checked: an attempt reserves
 * one failure of each of its subjects with one atomic conditional upsert, refused while the subject
 * must wait, so attempts racing on any number of instances are each counted and none is checked
 * during a wait. A right password gives its reservation back. The first few failures cost nothing;
 * then each one makes the subject wait a doubling delay, up to `slowdownMaxMs`; at `lockAfter`
 * failures the subject is locked for `lockMs`. The count starts again once a subject has had no
 * failure for `forgetAfterMs`.
 *
 * The subjects (see docs/auth.md): a sign-in from a browser that has signed in as that email before
 * (it holds a known-browser cookie) counts against that browser only; any other sign-in counts
 * against the pair email and IP (the tight limit), the email from everywhere (a loose limit against
 * guessing spread over many addresses) and the IP. The password re-check of a signed-in user counts
 * against that user's re-checks only; a second factor (after the password, or at a step-up) against
 * that user's second-factor guesses (and the IP, after the password). So nobody can lock a merchant out of a browser it has used,
 * nor out of the re-check, and an attacker from one address locks only that address's attempts.
 */
export type ThrottlePolicy = { freeFailures: number; slowdownMaxMs: number; lockAfter: number; lockMs: number; forgetAfterMs: number };

const HOUR = 60 * 60_000;
/** One email from one IP, one known browser, one user's password re-checks. */
export const EMAIL_POLICY: ThrottlePolicy = { freeFailures: 3, slowdownMaxMs: 30_000, lockAfter: 10, lockMs: 15 * 60_000, forgetAfterMs: HOUR };
/** One email from every browser it has not signed in from: guessing spread over many addresses. */
export const ACCOUNT_POLICY: ThrottlePolicy = { freeFailures: 20, slowdownMaxMs: 30_000, lockAfter: 100, lockMs: 15 * 60_000, forgetAfterMs: HOUR };
/** One IP, whatever the emails. */
export const IP_POLICY: ThrottlePolicy = { freeFailures: 20, slowdownMaxMs: 30_000, lockAfter: 100, lockMs: 15 * 60_000, forgetAfterMs: HOUR };

/** `clearOnSuccess`: a right password forgets the subject's count; the others only give the attempt back. */
export type Subject = { key: string; policy: ThrottlePolicy; clearOnSuccess: boolean };

export const emailFromIpSubject = (email: string, ip: string): Subject => ({ key: `email-ip:${email}|${ip}`, policy: EMAIL_POLICY, clearOnSuccess: true });
export const accountSubject = (email: string): Subject => ({ key: `email:${email}`, policy: ACCOUNT_POLICY, clearOnSuccess: false });
export const ipSubject = (ip: string): Subject => ({ key: `ip:${ip}`, policy: IP_POLICY, clearOnSuccess: false });
export const knownBrowserSubject = (browserId: string): Subject => ({ key: `browser:${browserId}`, policy: EMAIL_POLICY, clearOnSuccess: true });
export const reauthSubject = (userId: string): Subject => ({ key: `reauth:${userId}`, policy: EMAIL_POLICY, clearOnSuccess: true });
/**
 * The second factor typed after the password, and at a step-up: one user's guesses, wherever they
 * come from (only a browser past that user's password can make them), slowed and locked as a
 * password's; the IP's count takes them too.
 */
export const secondFactorSubject = (userId: string): Subject => ({ key: `second-factor:${userId}`, policy: EMAIL_POLICY, clearOnSuccess: true });

/** The subjects of a sign-in attempt: its known browser's alone, else the email from this IP, the email, the IP. */
export const signInSubjects = (email: string, ip: string, knownBrowserId: string | undefined): Subject[] =>
  knownBrowserId ? [knownBrowserSubject(knownBrowserId)] : [emailFromIpSubject(email, ip), accountSubject(email), ipSubject(ip)];

/** The wait after the n-th failure of a window. */
export function delayAfter(failures: number, policy: ThrottlePolicy): number {
  if (failures >= policy.lockAfter) return policy.lockMs;
  if (failures <= policy.freeFailures) return 0;
  return Math.min(1000 * 2 ** (failures - policy.freeFailures - 1), policy.slowdownMaxMs);
}

/** `delayAfter` as SQL, for a count computed in the same statement. */
function delaySql(failures: RawBuilder<number>, policy: ThrottlePolicy): RawBuilder<number> {
  const steps = [];
  for (let n = policy.freeFailures + 1; n < policy.lockAfter; n++) steps.push(sql`when ${failures} = ${sql.lit(n)} then ${sql.lit(delayAfter(n, policy))}`);
  return sql<number>`(case when ${failures} >= ${sql.lit(policy.lockAfter)} then ${sql.lit(policy.lockMs)} ${sql.join(steps, sql` `)} else 0 end)`;
}

/** Reserves one failure of a subject unless it must wait; the wait in milliseconds when it must. */
async function reserve(db: Db, { key, policy }: Subject, now: number): Promise<number> {
  const forgotten = sql<boolean>`(sign_in_throttle.last_failure_at <= ${now - policy.forgetAfterMs} and sign_in_throttle.next_attempt_at <= ${now})`;
  const counted = sql<number>`(case when ${forgotten} then 1 else sign_in_throttle.failures + 1 end)`;
  const reserved = await db
    .insertInto('sign_in_throttle')
    .values({ subject: key, failures: 1, last_failure_at: now, next_attempt_at: now + delayAfter(1, policy) })
    .onConflict((oc) =>
      oc
        .column('subject')
        .doUpdateSet({ failures: counted, last_failure_at: now, next_attempt_at: sql`cast(${now} as bigint) + ${delaySql(counted, policy)}` })
        .where('sign_in_throttle.next_attempt_at', '<=', now),
    )
    .returning('failures')
    .executeTakeFirst();
  if (reserved) return 0;
  const row = await db.selectFrom('sign_in_throttle').select('next_attempt_at').where('subject', '=', key).executeTakeFirst();
  return Math.max(1, Number(row?.next_attempt_at ?? now) - now);
}

/** Gives one reserved failure back, with the wait the count had before it. */
async function release(db: Db, { key, policy }: Subject): Promise<void> {
  const previous = sql<number>`(sign_in_throttle.failures - 1)`;
  await db
    .updateTable('sign_in_throttle')
    .set({ failures: previous, next_attempt_at: sql`sign_in_throttle.last_failure_at + ${delaySql(previous, policy)}` })
    .where('subject', '=', key)
    .where('failures', '>', 0)
    .execute();
}

/**
 * Counts an attempt as a failure of each subject before its password is checked. 0 when every
 * subject took it; otherwise the longest wait met, and the attempt is counted nowhere.
 */
export async function reserveAttempt(db: Db, subjects: Subject[], now: number): Promise<number> {
  const taken: Subject[] = [];
  for (const subject of subjects) {
    const wait = await reserve(db, subject, now);
    if (wait > 0) {
      for (const done of taken) await release(db, done);
      return wait;
    }
    taken.push(subject);
  }
  return 0;
}

/** The password was right: subjects that clear on success forget their count; the others give the attempt back. */
export async function attemptSucceeded(db: Db, subjects: Subject[]): Promise<void> {
  for (const subject of subjects) {
    if (subject.clearOnSuccess) await db.deleteFrom('sign_in_throttle').where('subject', '=', subject.key).execute();
    else await release(db, subject);
  }
}

/** Counts that would be forgotten at the next failure anyway, removed by the periodic sweep. */
export async function purgeForgottenFailures(db: Db, now: number): Promise<number> {
  const forgetAfter = Math.max(EMAIL_POLICY.forgetAfterMs, ACCOUNT_POLICY.forgetAfterMs, IP_POLICY.forgetAfterMs);
  const result = await db
    .deleteFrom('sign_in_throttle')
    .where('last_failure_at', '<', now - forgetAfter)
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
