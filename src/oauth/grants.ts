import type { Selectable } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db, Tx } from '../db/index.ts';
import type { OAuthGrantsTable } from '../db/schema.ts';
import { SCOPES, type Scope } from './scopes.ts';

/** A coding agent's authorization on a merchant's account, as the merchant sees it. */
export type Grant = {
  id: string;
  merchantId: string;
  userId: string;
  clientId: string;
  clientName: string;
  scopes: Scope[];
  /** The mode whose data the agent was given, bound at consent: its tokens act on that mode only. */
  mode: Mode;
  createdAt: number;
  lastUsedAt: number | null;
  /** The limits the merchant set on the agent's refunds (USDC base units); null: not set, so it may not refund. */
  refundLimits: { perRefund: bigint | null; perDay: bigint | null };
};

export type RevocationReason = 'merchant' | 'client' | 'code_reused' | 'refresh_token_reused';

/** Last use is written back at most this often, so a busy agent does not write on every call. */
const TOUCH_EVERY_MS = 60_000;

/** Scopes in the order the consent screen lists them, each once. */
export function orderedScopes(scopes: Iterable<string>): Scope[] {
  const wanted = new Set(scopes);
  return SCOPES.map((s) => s.scope).filter((scope) => wanted.has(scope));
}

/** The columns a Grant is read from (`toGrant`). */
export const GRANT_COLUMNS = [
  'id',
  'merchant_id',
  'user_id',
  'client_id',
  'client_name',
  'scopes',
  'mode',
  'created_at',
  'last_used_at',
  'refund_limit_per_refund',
  'refund_limit_per_day',
] as const;
export type GrantRow = Pick<Selectable<OAuthGrantsTable>, (typeof GRANT_COLUMNS)[number]>;

export const toGrant = (row: GrantRow): Grant => ({
  id: row.id,
  merchantId: row.merchant_id,
  userId: row.user_id,
  clientId: row.client_id,
  clientName: row.client_name,
  scopes: orderedScopes(row.scopes.split(' ')),
  mode: row.mode,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  refundLimits: { perRefund: row.refund_limit_per_refund, perDay: row.refund_limit_per_day },
});

/** The merchant's active grant to a client in one mode, if there is one. */
export async function activeGrantFor(db: Db | Tx, merchantId: string, clientId: string, mode: Mode): Promise<Grant | undefined> {
  const row = await db
    .selectFrom('oauth_grants')
    .select(GRANT_COLUMNS)
    .where('merchant_id', '=', merchantId)
    .where('client_id', '=', clientId)
    .where('mode', '=', mode)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row && toGrant(row);
}

/** A grant by id while it is active; undefined once revoked. */
export async function activeGrant(db: Db | Tx, grantId: string): Promise<Grant | undefined> {
  const row = await db.selectFrom('oauth_grants').select(GRANT_COLUMNS).where('id', '=', grantId).where('revoked_at', 'is', null).executeTakeFirst();
  return row && toGrant(row);
}

/**
 * Records a consent: the scopes are added to the merchant's active grant to this client in this
 * mode, or a new grant is made. One active grant per merchant, client and mode (a unique index says so).
 */
export async function addConsent(
  trx: Tx,
  consent: { merchantId: string; userId: string; clientId: string; clientName: string; scopes: Scope[]; mode: Mode },
  now: number,
): Promise<Grant> {
  const existing = await activeGrantFor(trx, consent.merchantId, consent.clientId, consent.mode);
  if (existing) {
    const scopes = orderedScopes([...existing.scopes, ...consent.scopes]);
    await trx
      .updateTable('oauth_grants')
      .set({ scopes: scopes.join(' '), client_name: consent.clientName, user_id: consent.userId, updated_at: now })
      .where('id', '=', existing.id)
      .execute();
    return { ...existing, scopes, clientName: consent.clientName, userId: consent.userId };
  }
  const grant: Grant = {
    id: newId('grant_'),
    ...consent,
    scopes: orderedScopes(consent.scopes),
    createdAt: now,
    lastUsedAt: null,
    refundLimits: { perRefund: null, perDay: null },
  };
  await trx
    .insertInto('oauth_grants')
    .values({
      id: grant.id,
      merchant_id: grant.merchantId,
      user_id: grant.userId,
      client_id: grant.clientId,
      client_name: grant.clientName,
      scopes: grant.scopes.join(' '),
      mode: grant.mode,
      created_at: now,
      updated_at: now,
      last_used_at: null,
      revoked_at: null,
      revoked_reason: null,
    })
    .execute();
  return grant;
}

/** The merchant's authorized coding agents, of one mode when given, newest first. */
export async function listGrants(db: Db, merchantId: string, mode?: Mode): Promise<Grant[]> {
  const rows = await db
    .selectFrom('oauth_grants')
    .select(GRANT_COLUMNS)
    .where('merchant_id', '=', merchantId)
    .where('revoked_at', 'is', null)
    .$if(mode !== undefined, (qb) => qb.where('mode', '=', mode!))
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map(toGrant);
}

/**
 * The agents' names of some of the merchant's grants, revoked ones included (their tool calls
 * outlive them): grant id → client name. Ids of other merchants are left out.
 */
export async function grantClientNames(db: Db, merchantId: string, grantIds: readonly string[]): Promise<Map<string, string>> {
  if (grantIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('oauth_grants')
    .select(['id', 'client_name'])
    .where('merchant_id', '=', merchantId)
    .where('id', 'in', [...new Set(grantIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, row.client_name]));
}

/**
 * Ends a grant at once: its refresh tokens stop working, and its access tokens are refused at the
 * next call (the grant is read on every call). With `merchantId`, only that merchant's grant.
 */
export async function revokeGrant(db: Db | Tx, grantId: string, reason: RevocationReason, now: number, merchantId?: string): Promise<boolean> {
  let update = db
    .updateTable('oauth_grants')
    .set({ revoked_at: now, revoked_reason: reason, updated_at: now })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null);
  if (merchantId !== undefined) update = update.where('merchant_id', '=', merchantId);
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Removes every grant a user gave, revoked or not, before the user is removed (`till live prepare`
 * removes the sandbox's demo user); their codes and refresh tokens go first (grant-secrets.ts).
 * The number removed.
 */
export async function removeGrantsOfUser(db: Db | Tx, userId: string): Promise<number> {
  const result = await db.deleteFrom('oauth_grants').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Whether a grant's last use is to be written back now (at most once a minute). */
export const touchDue = (grant: Pick<Grant, 'lastUsedAt'>, now: number) => grant.lastUsedAt === null || now - grant.lastUsedAt >= TOUCH_EVERY_MS;

/** Notes that a grant's token was used (for the merchant's list), at most once a minute. */
export async function touchGrant(db: Db, grant: Grant, now: number): Promise<void> {
  if (!touchDue(grant, now)) return;
  await writeLastUse(db, grant.id, now);
}

/** Writes a grant's last use, on `db` or in a transaction (the MCP audit's group commit). */
export async function writeLastUse(db: Db | Tx, grantId: string, at: number): Promise<void> {
  await db.updateTable('oauth_grants').set({ last_used_at: at }).where('id', '=', grantId).execute();
}

/**
 * Sets the limits of an active grant's refunds (USDC base units; null clears them, and the agent may
 * then not refund). Only the merchant's own grant; false when there is none. Set by the merchant in
 * the dashboard only: no tool writes them.
 */
export async function setRefundLimits(
  db: Db,
  grantId: string,
  merchantId: string,
  limits: { perRefund: bigint; perDay: bigint } | null,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('oauth_grants')
    .set({ refund_limit_per_refund: limits?.perRefund ?? null, refund_limit_per_day: limits?.perDay ?? null, updated_at: now })
    .where('id', '=', grantId)
    .where('merchant_id', '=', merchantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
