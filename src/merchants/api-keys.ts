import { randomBytes } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { type ApiKeyScope, scopesOfStored, storedScopes } from '../common/api-key-scopes.ts';
import { newId } from '../common/ids.ts';
import { type KeyMode, type Mode, modeOfKey } from '../common/modes.ts';
import { constantTimeEqual, sha256Hex } from '../common/secrets.ts';
import { type ChangeWatch, watchChanges } from '../db/change-watch.ts';
import type { Db } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import { walletOf } from './merchants.ts';

export type { KeyMode };

/** `scopes`: a restricted key's; none for a full key. */
export type IssuedApiKey = { keyId: string; apiKey: string; mode: KeyMode; lastFour: string; scopes?: ApiKeyScope[] };

const KEY_PATTERN = /^sk_(test|live)_[A-Za-z0-9_-]{43}$/;

/**
 * Issues a 256-bit key; only its SHA-256 is stored, so it can be shown this once. With `scopes` a
 * restricted key (at least one scope: an empty list is a mistake, never a full key).
 */
export async function createApiKey(db: Db, merchantId: string, mode: KeyMode, now = Date.now(), scopes?: readonly ApiKeyScope[]): Promise<IssuedApiKey> {
  if (scopes && scopes.length === 0) throw new Error('a restricted key needs at least one scope');
  const apiKey = `sk_${mode}_${randomBytes(32).toString('base64url')}`;
  const keyId = newId('key_');
  const lastFour = apiKey.slice(-4);
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      merchant_id: merchantId,
      mode,
      key_hash: sha256Hex(apiKey),
      last_four: lastFour,
      created_at: now,
      revoked_at: null,
      last_used_at: null,
      // A full key leaves the column to its default (null), so a key is made the same way on any schema since 0001.
      ...(scopes ? { scopes: storedScopes(scopes) } : {}),
    })
    .execute();
  return { keyId, apiKey, mode, lastFour, ...(scopes ? { scopes: [...scopes] } : {}) };
}

/** Revokes an active key; with `merchantId`, only a key of that merchant (another's is left alone and false answered). */
export async function revokeApiKey(db: Db, keyId: string, now = Date.now(), merchantId?: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .$if(merchantId !== undefined, (qb) => qb.where('merchant_id', '=', merchantId!))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Revokes every active key of a merchant in one mode; the ids revoked. */
export async function revokeMerchantKeys(db: Db, merchantId: string, mode: KeyMode, now = Date.now()): Promise<string[]> {
  const rows = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/** How stale `last_used_at` may get: a key in constant use is written once a minute, not on every request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** `scopes`: a restricted key's, undefined for a full key. */
export type AuthenticatedKey = {
  keyId: string;
  merchantId: string;
  mode: KeyMode;
  walletConfigured: boolean;
  keyHash: string;
  scopes: ApiKeyScope[] | undefined;
};

/** The key's row and its merchant's wallet, by the key's hash: one indexed read, built and compiled once. */
const keyByHash = prepareQuery((db: Db, params: { hash: string }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('merchants', 'merchants.id', 'api_keys.merchant_id')
    .select([
      'api_keys.id',
      'api_keys.merchant_id',
      'api_keys.mode',
      'api_keys.key_hash',
      'api_keys.revoked_at',
      'api_keys.last_used_at',
      'api_keys.scopes',
      'merchants.wallet_address',
      'merchants.test_wallet_address',
    ])
    .where('api_keys.key_hash', '=', params.hash),
);

/** An active key as last read, by its hash; `lastUsedAt` says when it is due to be written again. */
type KnownKey = Omit<AuthenticatedKey, 'keyHash'> & { lastUsedAt: number | null };

/** At most this many keys are remembered (only keys that authenticated, so only the keys merchants hold). */
const KNOWN_KEYS_MAX = 10_000;

type KnownKeys = { keys: Map<string, KnownKey>; watch: ChangeWatch };
const knownKeysByDb = new WeakMap<Db, KnownKeys>();

/**
 * The active keys already authenticated, so a request skips the key's read, on both engines. Every
 * committed change of a key or a merchant forgets them all (db/change-watch.ts): this process's at
 * its commit (a revocation, a wallet change), another process's on SQLite through `PRAGMA
 * data_version` (looked at on every look-up), another instance's on PostgreSQL through the NOTIFY
 * of migration 0031's and 0016's triggers; while that LISTEN is not in place every request reads
 * its key. So a revoked key is refused from the next request on, as without the cache. Only keys
 * that authenticated are kept: a new key is read on its first use. E1 on PostgreSQL does not use
 * it: it reads the key in the statement that writes the session.
 */
function knownKeysOf(db: Db): KnownKeys {
  let known = knownKeysByDb.get(db);
  if (!known) {
    const keys = new Map<string, KnownKey>();
    known = { keys, watch: watchChanges(db, { tables: ['api_keys', 'merchants'], otherProcessesEveryMs: 0 }, () => keys.clear()) };
    knownKeysByDb.set(db, known);
  }
  return known;
}

/**
 * Finds the merchant behind a presented key. The key is looked up by its hash and the
 * hashes compared in constant time; a key of the other mode than the service runs in is refused.
 */
export async function authenticateApiKey(
  db: Db,
  presented: string | undefined,
  servedModes: readonly Mode[],
  now = Date.now(),
): Promise<AuthenticatedKey | undefined> {
  const expectedMode = servedKeyMode(presented, servedModes);
  if (!presented || !expectedMode) return undefined;
  const hash = sha256Hex(presented);
  const known = knownKeysOf(db);
  // A known key is taken only once every change committed anywhere before now has been seen (it may have forgotten it).
  let key = known.keys.has(hash) && (await known.watch.current()) ? known.keys.get(hash) : undefined;
  if (!key) {
    const ticket = known.watch.ticket();
    // The merchant's wallet comes in the same round trip: every session write warns without it.
    const row = await keyByHash.executeTakeFirst(db, { hash });
    if (!row || !constantTimeEqual(row.key_hash, hash) || row.revoked_at !== null) return undefined;
    key = {
      keyId: row.id,
      merchantId: row.merchant_id,
      mode: row.mode,
      walletConfigured: walletOf(row, modeOfKey(row.mode)) !== null,
      lastUsedAt: row.last_used_at,
      scopes: scopesOfStored(row.scopes),
    };
    // Kept only when nothing changed while it was read: a change seen meanwhile may be newer than the row.
    if (known.watch.keeps(ticket)) {
      if (known.keys.size >= KNOWN_KEYS_MAX) known.keys.clear();
      known.keys.set(hash, key);
    }
  }
  if (key.mode !== expectedMode) return undefined;
  if (key.lastUsedAt === null || key.lastUsedAt <= now - LAST_USED_RESOLUTION_MS) {
    // Written once: a request racing this one sees it done. The update forgets the remembered keys
    // (a change of api_keys), so the next request reads the key anew.
    key.lastUsedAt = now;
    await db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', key.keyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - LAST_USED_RESOLUTION_MS)]))
      .execute();
  }
  return { keyId: key.keyId, merchantId: key.merchantId, mode: key.mode, walletConfigured: key.walletConfigured, keyHash: hash, scopes: key.scopes };
}

/** The mode a presented key's prefix names, when it has a key's shape and the deployment serves that mode. */
function servedKeyMode(presented: string | undefined, servedModes: readonly Mode[]): KeyMode | undefined {
  const prefix = presented && KEY_PATTERN.exec(presented)?.[1];
  if (!prefix) return undefined;
  const keyMode = prefix as KeyMode;
  return servedModes.includes(modeOfKey(keyMode)) ? keyMode : undefined;
}

/** What {@link usableApiKeyCtes} is given: the presented key's hash, the mode the service takes, and the time. */
export type ApiKeyUse = { keyHash: string; keyMode: KeyMode; now: number; usedBefore: number };

/** The SQL condition of {@link usableApiKeyCtes}'s `usable` on a key's scopes: a full key, or one holding `scope`. */
const holdsScope = (scope: ApiKeyScope) => sql`(k.scopes IS NULL OR (' ' || k.scopes || ' ') LIKE ${`% ${scope} %`})`;

/** The values for {@link usableApiKeyCtes}, or undefined when the presented text cannot be a key. */
export function apiKeyUse(presented: string | undefined, servedModes: readonly Mode[], now: number): ApiKeyUse | undefined {
  const keyMode = servedKeyMode(presented, servedModes);
  if (!presented || !keyMode) return undefined;
  return { keyHash: sha256Hex(presented), keyMode, now, usedBefore: now - LAST_USED_RESOLUTION_MS };
}

/**
 * The key lookup of {@link authenticateApiKey} as the opening of one PostgreSQL statement, so a
 * write that needs the key's merchant goes to the server in the same round trip: `key` is the
 * presented key's row (with the merchant's payout wallet of the key's mode), whatever its state; `usable` is that row only
 * when the key is active, of the service's mode and holds `scope`; `touched` writes `last_used_at` as
 * authenticateApiKey does, at most once a minute (skipped while another request is writing it, so
 * concurrent requests never wait on, or deadlock over, the key's row). The statement answers 401
 * when `usable` is empty. `lock_timeout` is set for this statement only: a write that waits behind
 * another transaction gives up after 5 s (55P03) instead of waiting for ever.
 */
export function usableApiKeyCtes(use: ApiKeyUse, scope: ApiKeyScope): RawBuilder<unknown> {
  return sql`key AS (
      SELECT k.id, k.merchant_id, k.mode, k.revoked_at, ${holdsScope(scope)} AS in_scope,
        CASE WHEN k.mode = 'test' THEN m.test_wallet_address ELSE m.wallet_address END AS wallet_address, set_config('lock_timeout', '5s', true) AS lock_timeout
      FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
      WHERE k.key_hash = ${use.keyHash}
    ),
    usable AS (SELECT * FROM key WHERE revoked_at IS NULL AND mode = ${use.keyMode} AND in_scope),
    touched AS (
      UPDATE api_keys SET last_used_at = ${use.now}::bigint
      WHERE id IN (
        SELECT id FROM api_keys
        WHERE id IN (SELECT id FROM usable) AND (last_used_at IS NULL OR last_used_at <= ${use.usedBefore}::bigint)
        FOR UPDATE SKIP LOCKED
      )
    )`;
}

/** `scopes`: a restricted key's; null for a full key. */
export type MaskedApiKey = { keyId: string; masked: string; mode: KeyMode; createdAt: string; lastUsedAt: string | null; scopes: ApiKeyScope[] | null };

/** A merchant's active API keys, oldest first, masked as "…" and the last four characters (the keys themselves are never stored). */
export async function listApiKeys(db: Db, merchantId: string, mode?: KeyMode): Promise<{ keys: MaskedApiKey[]; count: number }> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'mode', 'last_four', 'created_at', 'last_used_at', 'scopes'])
    .where('merchant_id', '=', merchantId)
    .where('revoked_at', 'is', null)
    .$if(mode !== undefined, (qb) => qb.where('mode', '=', mode!))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const keys = rows.map((row) => ({
    keyId: row.id,
    masked: `…${row.last_four}`,
    mode: row.mode,
    createdAt: new Date(row.created_at).toISOString(),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at).toISOString(),
    scopes: scopesOfStored(row.scopes) ?? null,
  }));
  return { keys, count: keys.length };
}

/** How many API keys of a merchant are active (not revoked). */
export async function countActiveApiKeys(db: Db, merchantId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | bigint | string>().as('count'))
    .where('merchant_id', '=', merchantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** An active key a coding agent made with the MCP tool `create_api_key`, and the authorization that made it. */
export type AgentMadeKey = MaskedApiKey & { grantId: string; clientId: string };

/** The longest a `create_api_key` call may take between making its key and being audited. */
const AGENT_KEY_AUDIT_WINDOW_MS = 60_000;

/**
 * A merchant's active keys made through MCP since a time, newest first. A key does not say who made
 * it: each successful `create_api_key` call of the MCP audit is matched to the latest key of the
 * merchant made at most a minute before the call was audited and not already matched.
 */
export async function keysMadeByAgentsSince(db: Db, merchantId: string, since: number): Promise<AgentMadeKey[]> {
  const calls = await db
    .selectFrom('mcp_tool_calls')
    .select(['created_at', 'grant_id', 'client_id'])
    .where('merchant_id', '=', merchantId)
    .where('tool', '=', 'create_api_key')
    .where('outcome', '=', 'ok')
    .where('created_at', '>=', since)
    .orderBy('created_at')
    .execute();
  if (calls.length === 0) return [];
  const keys = await db
    .selectFrom('api_keys')
    .select(['id', 'mode', 'last_four', 'created_at', 'last_used_at', 'revoked_at', 'scopes'])
    .where('merchant_id', '=', merchantId)
    .where('created_at', '>=', since)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const matched = new Map<string, { grantId: string; clientId: string }>();
  for (const call of calls) {
    const auditedAt = Number(call.created_at);
    const key = keys.find(
      (row) => !matched.has(row.id) && Number(row.created_at) <= auditedAt && Number(row.created_at) >= auditedAt - AGENT_KEY_AUDIT_WINDOW_MS,
    );
    if (key) matched.set(key.id, { grantId: call.grant_id, clientId: call.client_id });
  }
  return keys.flatMap((row) => {
    const maker = matched.get(row.id);
    if (!maker || row.revoked_at !== null) return [];
    return [
      {
        keyId: row.id,
        masked: `…${row.last_four}`,
        mode: row.mode,
        createdAt: new Date(Number(row.created_at)).toISOString(),
        lastUsedAt: row.last_used_at === null ? null : new Date(Number(row.last_used_at)).toISOString(),
        scopes: scopesOfStored(row.scopes) ?? null,
        ...maker,
      },
    ];
  });
}
