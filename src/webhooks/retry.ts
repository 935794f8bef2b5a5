import type { AttemptOutcome } from './deliver.ts';

/** The longest wait a Retry-After header can impose. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
const JITTER = 0.2;

export type AttemptDecision =
  | { status: 'SUCCEEDED' }
  | { status: 'PENDING'; retryInMs: number }
  | { status: 'FAILED'; reason: string; disableEndpoint: boolean };

/**
 * What follows attempt number `attempt` (1-based): only HTTP 200 is success; a URL nothing may be
 * sent to (an http URL in live mode) fails at once; 410 Gone disables the endpoint; anything else
 * waits for the schedule's next step (±10 % jitter, so a recovering receiver is not hit by every
 * retry at once), or at least Retry-After on 429/503, until the schedule runs out.
 */
export function decideAfterAttempt(outcome: AttemptOutcome, attempt: number, schedule: readonly number[], random: () => number = Math.random): AttemptDecision {
  if (outcome.statusCode === 200) return { status: 'SUCCEEDED' };
  if (outcome.unsendable) return { status: 'FAILED', reason: 'not retried: set a URL deliveries may go to, then redeliver the event', disableEndpoint: false };
  if (outcome.statusCode === 410)
    return { status: 'FAILED', reason: 'The receiver answered 410 Gone: the endpoint is disabled until its URL is set again', disableEndpoint: true };
  const step = schedule[attempt - 1];
  if (step === undefined) return { status: 'FAILED', reason: `No 200 after ${attempt} attempts; retries exhausted`, disableEndpoint: false };
  const jittered = Math.round(step * (1 - JITTER / 2 + random() * JITTER));
  const retryAfter = outcome.retryAfterMs === null ? 0 : Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS);
  return { status: 'PENDING', retryInMs: Math.max(jittered, retryAfter) };
}
