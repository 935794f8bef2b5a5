import { sha256Hex } from '../common/secrets.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import { consume, type Limit } from '../limits/limits.ts';

export const CREATION_WINDOW_MS = 60_000;
export const CREATION_LIMIT_NAME = 'e1_sessions_key';

/** E1's limit: sessions one API key (or one merchant's bearer tokens) may create per minute. */
export const creationLimit = (config: Pick<Config, 'sessionsPerMinutePerKey'>): Limit => ({
  name: CREATION_LIMIT_NAME,
  points: config.sessionsPerMinutePerKey,
  windowMs: CREATION_WINDOW_MS,
  what: 'payment sessions created with this API key',
});

/** The subject an API key is counted under: its SHA-256, as stored beside the key (never the key). */
export const keySubject = (keyHash: string) => `key:${keyHash}`;

/** Counts one E1 of an authenticated caller; `rate_limited` (429 with Retry-After) past the limit. */
export function limitCreation(db: Db, config: Pick<Config, 'sessionsPerMinutePerKey'>, caller: { apiKey: string } | { merchantId: string }, now: number) {
  const subject = 'apiKey' in caller ? keySubject(sha256Hex(caller.apiKey.trim())) : `merchant:${caller.merchantId}`;
  return consume(db, [{ limit: creationLimit(config), subject }], now);
}
