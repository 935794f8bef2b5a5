import { sql } from 'kysely';
import { TillError } from '../common/errors.ts';
import type { Db } from '../db/index.ts';

/**
 * Request limits counted in the database, so N instances on one database count one total: a
 * fixed window per limit and subject (an IP, a session …), raised by one atomic upsert per request
 * (`INSERT … ON CONFLICT DO UPDATE … RETURNING`, the same statement on SQLite and PostgreSQL).
 */
export type Limit = {
  /** Names the counter; stable, since rows are keyed by it. */
  name: string;
  /** Requests allowed per window. */
  points: number;
  windowMs: number;
  /** Completes "Too many …" in the refusal, e.g. "payment proofs from this client". */
  what: string;
};

export type Hit = { limit: Limit; subject: string };

/**
 * Counts one request against each limit in one statement; throws `rate_limited` (429, with
 * Retry-After until the window ends) for the first limit, in the order given, that is over.
 * Every hit counts even when another one refuses: a refused request still spent a try. A limit that
 * must not count what another refuses (a session's, after its client's) is consumed after it, alone.
 */
export async function consume(db: Db, hits: Hit[], now: number): Promise<void> {
  if (hits.length === 0) return;
  const rows = hits.map(({ limit, subject }) => {
    const windowStart = now - (now % limit.windowMs);
    return { limit_name: limit.name, subject, window_start: windowStart, hits: 1, expires_at: windowStart + limit.windowMs };
  });
  // One lock order for every statement, so two racing multi-row upserts never deadlock.
  const ordered = [...rows].sort((a, b) => (a.limit_name + a.subject < b.limit_name + b.subject ? -1 : 1));
  const counted = await db
    .insertInto('rate_limit_windows')
    .values(ordered)
    .onConflict((oc) => oc.columns(['limit_name', 'subject', 'window_start']).doUpdateSet({ hits: sql`rate_limit_windows.hits + 1` }))
    .returning(['limit_name', 'subject', 'hits'])
    .execute();
  for (const [i, { limit, subject }] of hits.entries()) {
    const count = counted.find((row) => row.limit_name === limit.name && row.subject === subject)?.hits ?? 0;
    if (count > limit.points) {
      const retryAfterSeconds = Math.max(1, Math.ceil((rows[i]!.expires_at - now) / 1000));
      throw new TillError('rate_limited', { what: limit.what, retryAfterSeconds });
    }
  }
}

/** Windows that have ended, removed by the periodic sweep. */
export async function purgeEndedWindows(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('rate_limit_windows').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
