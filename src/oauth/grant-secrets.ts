import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../common/secrets.ts';
import type { Db, Tx } from '../db/index.ts';
import { revokeGrant } from './grants.ts';

/** Authorization codes are exchanged at once by the client: a minute is plenty. */
export const CODE_SECONDS = 60;
/** A refresh token unused for 30 days expires; each use gives a new one. */
export const REFRESH_TOKEN_SECONDS = 30 * 86_400;

type Kind = 'code' | 'refresh_token';
const LIFETIME_SECONDS: Record<Kind, number> = { code: CODE_SECONDS, refresh_token: REFRESH_TOKEN_SECONDS };
const PREFIX: Record<Kind, string> = { code: 'ac_', refresh_token: 'rt_' };

export type GrantSecret = { grantId: string; clientId: string; redirectUri: string | null; codeChallenge: string | null };

/** Removes the codes and refresh tokens of every grant a user gave, before those grants are removed. */
export async function removeSecretsOfUserGrants(db: Db | Tx, userId: string): Promise<void> {
  await db
    .deleteFrom('oauth_grant_secrets')
    .where('grant_id', 'in', (eb) => eb.selectFrom('oauth_grants').select('id').where('user_id', '=', userId))
    .execute();
}

/** A new code or refresh token under a grant. Only its SHA-256 is stored: the value is shown this once. */
export async function issueGrantSecret(
  trx: Db | Tx,
  kind: Kind,
  secret: { grantId: string; clientId: string; redirectUri?: string; codeChallenge?: string },
  now: number,
): Promise<string> {
  const value = `${PREFIX[kind]}${randomBytes(32).toString('base64url')}`;
  await trx
    .insertInto('oauth_grant_secrets')
    .values({
      secret_hash: sha256Hex(value),
      kind,
      grant_id: secret.grantId,
      client_id: secret.clientId,
      redirect_uri: secret.redirectUri ?? null,
      code_challenge: secret.codeChallenge ?? null,
      created_at: now,
      expires_at: now + LIFETIME_SECONDS[kind] * 1000,
      consumed_at: null,
    })
    .execute();
  return value;
}

export type Consumed = { outcome: 'consumed'; secret: GrantSecret } | { outcome: 'unknown' } | { outcome: 'reused'; grantId: string };

/**
 * Uses a code or refresh token up, atomically: of any number of concurrent attempts, on either
 * engine, exactly one gets `consumed` (a conditional UPDATE is the claim). Presenting one that was
 * already used is a replay: the whole grant is revoked in the same transaction, so whoever holds
 * tokens from it (the thief or the client) must ask the merchant again.
 */
export async function consumeGrantSecret(trx: Tx, kind: Kind, value: string, now: number): Promise<Consumed> {
  if (!value.startsWith(PREFIX[kind]) || value.length > 100) return { outcome: 'unknown' };
  const hash = sha256Hex(value);
  const claimed = await trx
    .updateTable('oauth_grant_secrets')
    .set({ consumed_at: now })
    .where('secret_hash', '=', hash)
    .where('kind', '=', kind)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['grant_id', 'client_id', 'redirect_uri', 'code_challenge'])
    .executeTakeFirst();
  if (claimed)
    return {
      outcome: 'consumed',
      secret: { grantId: claimed.grant_id, clientId: claimed.client_id, redirectUri: claimed.redirect_uri, codeChallenge: claimed.code_challenge },
    };
  const used = await trx
    .selectFrom('oauth_grant_secrets')
    .select('grant_id')
    .where('secret_hash', '=', hash)
    .where('kind', '=', kind)
    .where('consumed_at', 'is not', null)
    .executeTakeFirst();
  if (!used) return { outcome: 'unknown' };
  await revokeGrant(trx, used.grant_id, kind === 'code' ? 'code_reused' : 'refresh_token_reused', now);
  return { outcome: 'reused', grantId: used.grant_id };
}

/** The grant a refresh token belongs to, used or not, if the presenting client is its client (RFC 7009 revocation). */
export async function grantOfRefreshToken(db: Db, value: string, clientId: string): Promise<string | undefined> {
  if (!value.startsWith(PREFIX.refresh_token) || value.length > 100) return undefined;
  const row = await db
    .selectFrom('oauth_grant_secrets')
    .select(['grant_id', 'client_id'])
    .where('secret_hash', '=', sha256Hex(value))
    .where('kind', '=', 'refresh_token')
    .executeTakeFirst();
  return row && row.client_id === clientId ? row.grant_id : undefined;
}

/** Used and expired secrets are kept a day more, so a late replay is still recognised as one. */
const KEEP_AFTER_END_MS = 86_400_000;

/** Codes and refresh tokens a day past their end, removed by the periodic sweep. */
export async function purgeEndedGrantSecrets(db: Db, now: number): Promise<number> {
  const result = await db
    .deleteFrom('oauth_grant_secrets')
    .where('expires_at', '<', now - KEEP_AFTER_END_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
