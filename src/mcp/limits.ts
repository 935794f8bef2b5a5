import type { Db } from '../db/index.ts';
import { countedCallsSince } from './audit.ts';

/** Spec 8: tool calls per hour per authorization (grant). */
export const TOOL_CALLS_PER_HOUR = 300;
export const HOUR_MS = 3_600_000;

/**
 * Seconds until the grant may call again, when its last hour already holds the limit; undefined
 * when it may call now. Counted from the audit table, so every instance sees the same count.
 */
export async function hourlyLimitRetryAfter(db: Db, grantId: string, now: number): Promise<number | undefined> {
  const { count, oldest } = await countedCallsSince(db, grantId, now - HOUR_MS);
  if (count < TOOL_CALLS_PER_HOUR) return undefined;
  return Math.max(1, Math.ceil(((oldest ?? now) + HOUR_MS - now) / 1000));
}
