import { randomInt } from 'node:crypto';
import { TillError } from '../common/errors.ts';
import { sha256Hex } from '../common/secrets.ts';
import type { Config } from '../config.ts';
import type { DatabaseKind, Db } from '../db/index.ts';
import { consume, type Limit } from '../limits/limits.ts';

export const CREATION_WINDOW_MS = 60_000;
export const CREATION_LIMIT_NAME = 'e1_sessions_key';
/**
 * On PostgreSQL a caller's count is spread over this many rows, one picked at random per request,
 * and summed: one row per key would make every E1 of a busy key wait for the one before it to commit.
 */
export const CREATION_SHARDS = 16;

/** E1's limit: sessions one API key (or one merchant's bearer tokens) may create per minute. */
export const creationLimit = (config: Pick<Config, 'sessionsPerMinutePerKey'>): Limit => ({
  name: CREATION_LIMIT_NAME,
  points: config.sessionsPerMinutePerKey,
  windowMs: CREATION_WINDOW_MS,
  what: 'payment sessions created with this API key',
});

/** The subject an API key is counted under: its SHA-256, as stored beside the key (never the key). */
export const keySubject = (keyHash: string) => `key:${keyHash}`;

/** The rows a caller's count is spread over on PostgreSQL: the one this request adds to, and the others it sums. */
export function creationShards(subject: string): { mine: string; others: string[] } {
  const mine = randomInt(CREATION_SHARDS);
  const all = Array.from({ length: CREATION_SHARDS }, (_, shard) => `${subject}#${shard}`);
  return { mine: all[mine]!, others: all.filter((_, shard) => shard !== mine) };
}

/**
 * On SQLite one process serves the database (several instances need PostgreSQL), so that process's
 * own count is the count, and E1 writes nothing more than its session.
 */
const processCounts = new WeakMap<Db, { windowStart: number; counts: Map<string, number> }>();

function consumeInProcess(db: Db, limit: Limit, subject: string, now: number): void {
  const windowStart = now - (now % limit.windowMs);
  let window = processCounts.get(db);
  if (!window || window.windowStart !== windowStart) {
    window = { windowStart, counts: new Map() };
    processCounts.set(db, window);
  }
  const count = (window.counts.get(subject) ?? 0) + 1;
  window.counts.set(subject, count);
  if (count > limit.points)
    throw new TillError('rate_limited', { what: limit.what, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + limit.windowMs - now) / 1000)) });
}

/** Counts one E1 of an authenticated caller (an API key, or its SHA-256 when already known); `rate_limited` (429 with Retry-After) past the limit. */
export async function limitCreation(
  context: { db: Db; dbKind: DatabaseKind; config: Pick<Config, 'sessionsPerMinutePerKey'> },
  caller: { apiKey: string } | { keyHash: string } | { merchantId: string },
  now: number,
): Promise<void> {
  const subject =
    'keyHash' in caller ? keySubject(caller.keyHash) : 'apiKey' in caller ? keySubject(sha256Hex(caller.apiKey.trim())) : `merchant:${caller.merchantId}`;
  const limit = creationLimit(context.config);
  if (context.dbKind === 'sqlite') return consumeInProcess(context.db, limit, subject, now);
  return consume(context.db, [{ limit, subject }], now);
}
