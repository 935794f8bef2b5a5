import { type RawBuilder, sql } from 'kysely';
import { invalidField, TillError } from '../common/errors.ts';
import { sha256Hex } from '../common/secrets.ts';
import type { Db, Tx } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type StoredResponse = { status: number; body: string };

export function checkIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value) || !KEY_PATTERN.test(value)) {
    throw invalidField('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
  }
  return value;
}

const inUse = () => new TillError('idempotency_key_in_use');

/**
 * The key as stored. A live service keeps its keys apart from the sandbox's (a space, which no key a
 * client sends holds, sets the mode off), so a key used in the sandbox is a new key in live and never
 * replays a sandbox session. A sandbox key is stored as sent, as before modes were recorded.
 */
export function storedIdempotencyKey(key: string, mode: Mode): string {
  return mode === 'live' ? `live ${key}` : key;
}

/**
 * Runs `work` at most once per (merchant, key) within 24 h. The key row is inserted first in
 * the same transaction as the work, so a duplicate waits for the first to commit (or gets 409
 * after the lock timeout) and then receives the first request's status and body byte for byte;
 * if the first fails, nothing of it is kept and the key is free again.
 */
export async function runIdempotently(
  db: Db,
  dbKind: 'sqlite' | 'postgres',
  scope: { merchantId: string; key: string; requestBody: unknown; now: number },
  work: (trx: Tx) => Promise<StoredResponse>,
): Promise<StoredResponse> {
  const requestHash = requestHashOf(scope.requestBody);
  try {
    return await db.transaction().execute(async (trx) => {
      if (dbKind === 'postgres') await sql`SET LOCAL lock_timeout = '5s'`.execute(trx);
      await trx
        .deleteFrom('idempotency_keys')
        .where('merchant_id', '=', scope.merchantId)
        .where('idempotency_key', '=', scope.key)
        .where('expires_at', '<=', scope.now)
        .execute();
      const inserted = await trx
        .insertInto('idempotency_keys')
        .values({
          merchant_id: scope.merchantId,
          idempotency_key: scope.key,
          request_hash: requestHash,
          status_code: null,
          response_body: null,
          created_at: scope.now,
          expires_at: scope.now + IDEMPOTENCY_TTL_MS,
        })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 0n) {
        const first = await trx
          .selectFrom('idempotency_keys')
          .select(['request_hash', 'status_code', 'response_body'])
          .where('merchant_id', '=', scope.merchantId)
          .where('idempotency_key', '=', scope.key)
          .executeTakeFirstOrThrow();
        return replayOf(first, requestHash);
      }
      const response = await work(trx);
      await trx
        .updateTable('idempotency_keys')
        .set({ status_code: response.status, response_body: response.body })
        .where('merchant_id', '=', scope.merchantId)
        .where('idempotency_key', '=', scope.key)
        .execute();
      return response;
    });
  } catch (error) {
    if (isLockTimeout(error)) throw inUse();
    throw error;
  }
}

/**
 * {@link runIdempotently}'s claim as a part of one PostgreSQL statement, for work that is itself one
 * insert in the same statement: the key row is written for the merchant of the CTE `source`
 * complete with the response (`body`, an SQL expression over `source`), since the statement either
 * commits whole or not at all. On a key already held it answers the row as it stands (a duplicate
 * in flight is waited for, as runIdempotently waits, and then replayed); an expired row is taken
 * over. Returns `request_hash`, `status_code`, `response_body`: the work should run only when the
 * answered row is this request's own (its body names what this request creates).
 */
export function claimIdempotencyKeyFrom(
  source: string,
  claim: { key: string; requestHash: string; now: number; expiresAt: number },
  response: { status: number; body: RawBuilder<unknown> },
): RawBuilder<unknown> {
  const take = (column: string) =>
    sql`${sql.id(column)} = CASE WHEN idempotency_keys.expires_at <= ${claim.now}::bigint THEN excluded.${sql.id(column)} ELSE idempotency_keys.${sql.id(column)} END`;
  return sql`INSERT INTO idempotency_keys (merchant_id, idempotency_key, request_hash, status_code, response_body, created_at, expires_at)
    SELECT merchant_id, ${claim.key}, ${claim.requestHash}, ${sql.lit(response.status)}, ${response.body}, ${claim.now}::bigint, ${claim.expiresAt}::bigint
    FROM ${sql.table(source)}
    ON CONFLICT (merchant_id, idempotency_key) DO UPDATE SET
      ${sql.join(['request_hash', 'status_code', 'response_body', 'created_at', 'expires_at'].map(take))}
    RETURNING request_hash, status_code, response_body`;
}

/** What a replay is told apart by: a key reused with another body is refused. */
export const requestHashOf = (requestBody: unknown) => sha256Hex(JSON.stringify(requestBody ?? null));

/** A key held by another request with a different body (422), or still in flight (409); otherwise the first answer to replay. */
export function replayOf(first: { request_hash: string; status_code: number | null; response_body: string | null }, requestHash: string): StoredResponse {
  if (first.request_hash !== requestHash) throw new TillError('idempotency_key_reused');
  if (first.status_code === null || first.response_body === null) throw inUse();
  return { status: first.status_code, body: first.response_body };
}

/** PostgreSQL's lock_timeout ran out: another request holds the key. */
export function isLockTimeout(error: unknown): boolean {
  return (error as { code?: string }).code === '55P03';
}

export async function purgeExpiredIdempotencyKeys(db: Db, now: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).execute();
}
