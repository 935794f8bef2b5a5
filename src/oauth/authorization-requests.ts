import { randomBytes } from 'node:crypto';
import type { Db, Tx } from '../db/index.ts';
import { orderedScopes } from './grants.ts';
import type { Scope } from './scopes.ts';

/** A merchant has this long to sign in and answer the consent screen. */
export const AUTHORIZATION_REQUEST_SECONDS = 600;

/** A checked authorization request, waiting for the merchant's consent. */
export type AuthorizationRequest = {
  id: string;
  clientId: string;
  clientName: string;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  scopes: Scope[];
  resource: string;
  /** The user it was first shown to; only they can answer it. */
  userId: string | null;
};

export async function saveAuthorizationRequest(db: Db, request: Omit<AuthorizationRequest, 'id' | 'userId'>, now: number): Promise<AuthorizationRequest> {
  const id = randomBytes(24).toString('base64url');
  await db
    .insertInto('oauth_authorization_requests')
    .values({
      id,
      client_id: request.clientId,
      client_name: request.clientName,
      redirect_uri: request.redirectUri,
      state: request.state ?? null,
      code_challenge: request.codeChallenge,
      scopes: request.scopes.join(' '),
      resource: request.resource,
      user_id: null,
      created_at: now,
      expires_at: now + AUTHORIZATION_REQUEST_SECONDS * 1000,
      consumed_at: null,
    })
    .execute();
  return { id, ...request, userId: null };
}

/** A request still waiting for an answer (not answered, not expired). */
export async function pendingAuthorizationRequest(db: Db, id: string, now: number): Promise<AuthorizationRequest | undefined> {
  if (!/^[\w-]{32}$/.test(id)) return undefined;
  const row = await db
    .selectFrom('oauth_authorization_requests')
    .selectAll()
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    clientId: row.client_id,
    clientName: row.client_name,
    redirectUri: row.redirect_uri,
    state: row.state ?? undefined,
    codeChallenge: row.code_challenge,
    scopes: orderedScopes(row.scopes ? row.scopes.split(' ') : []),
    resource: row.resource,
    userId: row.user_id,
  };
}

/** Binds the request to the first signed-in user who opens it; true when it is (now) theirs. */
export async function claimAuthorizationRequest(db: Db, request: AuthorizationRequest, userId: string): Promise<boolean> {
  if (request.userId !== null) return request.userId === userId;
  await db.updateTable('oauth_authorization_requests').set({ user_id: userId }).where('id', '=', request.id).where('user_id', 'is', null).execute();
  const row = await db.selectFrom('oauth_authorization_requests').select('user_id').where('id', '=', request.id).executeTakeFirst();
  return row?.user_id === userId;
}

/** Marks the request answered, once: false when it was already answered (a second post of the form). */
export async function answerAuthorizationRequest(trx: Tx, id: string, userId: string, now: number): Promise<boolean> {
  const result = await trx
    .updateTable('oauth_authorization_requests')
    .set({ consumed_at: now })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Requests past their end, removed by the periodic sweep. */
export async function purgeEndedAuthorizationRequests(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('oauth_authorization_requests').where('expires_at', '<', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
