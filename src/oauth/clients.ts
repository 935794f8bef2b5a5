import { randomBytes } from 'node:crypto';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import { constantTimeEqual, sha256Hex } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';

export type IssuedClient = { clientId: string; clientSecret: string; merchantId: string; mode: Mode };

const CLIENT_ID = /^cli_[\w-]{22}$/;
const CLIENT_SECRET = /^cs_[\w-]{43}$/;

/**
 * A client for a merchant's server, bound to one mode for good: its tokens act on that mode's data
 * only. Only the SHA-256 of its 256-bit secret is stored, so it is shown this once.
 */
export async function createClient(db: Db, merchantId: string, mode: Mode, now = Date.now()): Promise<IssuedClient> {
  const clientId = newId('cli_');
  const clientSecret = `cs_${randomBytes(32).toString('base64url')}`;
  await db
    .insertInto('oauth_clients')
    .values({ id: clientId, merchant_id: merchantId, mode, secret_hash: sha256Hex(clientSecret), created_at: now, revoked_at: null })
    .execute();
  return { clientId, clientSecret, merchantId, mode };
}

/** Revokes an active client; with `merchantId`, only a client of that merchant (another's is left alone and false answered). */
export async function revokeClient(db: Db, clientId: string, now = Date.now(), merchantId?: string): Promise<boolean> {
  const result = await db
    .updateTable('oauth_clients')
    .set({ revoked_at: now })
    .where('id', '=', clientId)
    .where('revoked_at', 'is', null)
    .$if(merchantId !== undefined, (qb) => qb.where('merchant_id', '=', merchantId!))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export type ClientSummary = { clientId: string; mode: Mode; createdAt: string };

/** A merchant's active clients, oldest first, of one mode when given (their secrets are never stored, so never shown again). */
export async function listClients(db: Db, merchantId: string, mode?: Mode): Promise<ClientSummary[]> {
  const rows = await db
    .selectFrom('oauth_clients')
    .select(['id', 'mode', 'created_at'])
    .where('merchant_id', '=', merchantId)
    .where('revoked_at', 'is', null)
    .$if(mode !== undefined, (qb) => qb.where('mode', '=', mode!))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ clientId: row.id, mode: row.mode, createdAt: new Date(row.created_at).toISOString() }));
}

/** The merchant and mode of an active client whose secret this is; the hashes are compared in constant time. */
export async function authenticateClient(
  db: Db,
  clientId: string,
  clientSecret: string,
): Promise<{ clientId: string; merchantId: string; mode: Mode } | undefined> {
  if (!CLIENT_ID.test(clientId) || !CLIENT_SECRET.test(clientSecret)) return undefined;
  const row = await db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
  const presented = sha256Hex(clientSecret);
  const matches = constantTimeEqual(row?.secret_hash ?? sha256Hex(''), presented);
  if (!row || !matches || row.revoked_at !== null) return undefined;
  return { clientId: row.id, merchantId: row.merchant_id, mode: row.mode };
}

/** An active client with its mode and its merchant's wallet state, for a bearer token naming it. */
export async function activeClient(db: Db, clientId: string): Promise<{ merchantId: string; mode: Mode; walletConfigured: boolean } | undefined> {
  const row = await db
    .selectFrom('oauth_clients')
    .innerJoin('merchants', 'merchants.id', 'oauth_clients.merchant_id')
    .select(['oauth_clients.merchant_id', 'oauth_clients.mode', 'oauth_clients.revoked_at', 'merchants.wallet_address', 'merchants.test_wallet_address'])
    .where('oauth_clients.id', '=', clientId)
    .executeTakeFirst();
  if (!row || row.revoked_at !== null) return undefined;
  return { merchantId: row.merchant_id, mode: row.mode, walletConfigured: (row.mode === 'sandbox' ? row.test_wallet_address : row.wallet_address) !== null };
}
