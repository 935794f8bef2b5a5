import { createHmac, randomBytes } from 'node:crypto';
import { sha256Hex } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';

export type SessionTimeouts = { idleSeconds: number; absoluteSeconds: number };
/**
 * `secondFactorDue`: past the password, the second factor still to give (not signed in yet);
 * `secondFactorAt`: when this browser last gave one.
 */
export type SignedInSession = {
  idHash: string;
  userId: string;
  createdAt: number;
  expiresAt: number;
  secondFactorDue: boolean;
  secondFactorAt: number | null;
};

/** Activity is written back at most this often, so reading pages does not write on every request. */
const TOUCH_EVERY_MS = 60_000;

/**
 * Starts a new session for the user and ends the one the browser had, if any: the cookie value
 * changes at every sign-in (no session fixation). Returns the new cookie value.
 */
export async function startUserSession(
  db: Db,
  userId: string,
  previousToken: string | undefined,
  timeouts: SessionTimeouts,
  now: number,
  /** `alongside` runs in the session's transaction (the activity log's line of a sign-in from a new browser). */
  options: { secondFactorDue?: boolean; alongside?: (trx: Db) => Promise<void> } = {},
): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await db.transaction().execute(async (trx) => {
    await options.alongside?.(trx);
    if (previousToken) await trx.deleteFrom('user_sessions').where('id_hash', '=', sha256Hex(previousToken)).execute();
    await trx
      .insertInto('user_sessions')
      .values({
        id_hash: sha256Hex(token),
        user_id: userId,
        created_at: now,
        last_seen_at: now,
        expires_at: now + timeouts.absoluteSeconds * 1000,
        second_factor_due: options.secondFactorDue ? 1 : 0,
        second_factor_at: null,
      })
      .execute();
  });
  return token;
}

/** The live session behind a cookie value; an idle or expired one is ended and not returned. */
export async function readUserSession(db: Db, token: string | undefined, timeouts: SessionTimeouts, now: number): Promise<SignedInSession | undefined> {
  if (!token || token.length > 100) return undefined;
  const idHash = sha256Hex(token);
  const row = await db.selectFrom('user_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
  if (!row) return undefined;
  const lastSeen = Number(row.last_seen_at);
  if (now >= Number(row.expires_at) || now - lastSeen >= timeouts.idleSeconds * 1000) {
    await db.deleteFrom('user_sessions').where('id_hash', '=', idHash).execute();
    return undefined;
  }
  if (now - lastSeen >= TOUCH_EVERY_MS) await db.updateTable('user_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
  return {
    idHash,
    userId: row.user_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    secondFactorDue: Number(row.second_factor_due) === 1,
    secondFactorAt: row.second_factor_at === null ? null : Number(row.second_factor_at),
  };
}

/** The browser gave its second factor: signed in now (when it was due), and fresh for a step-up. */
export async function secondFactorGiven(db: Db, idHash: string, now: number): Promise<void> {
  await db.updateTable('user_sessions').set({ second_factor_due: 0, second_factor_at: now }).where('id_hash', '=', idHash).execute();
}

export async function endUserSession(db: Db, token: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('id_hash', '=', sha256Hex(token)).execute();
}

/** Signs the user out everywhere (after a password reset). */
export async function endAllUserSessions(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('user_id', '=', userId).execute();
}

/** The CSRF token of a signed-in session's forms: bound to the session, derivable only with the secret key. */
export function sessionCsrfToken(secretKey: Buffer, idHash: string): string {
  return createHmac('sha256', secretKey).update(`csrf:${idHash}`).digest('base64url');
}

/** Sessions past their absolute end, removed by the periodic sweep (idle ones are also removed when next read). */
export async function purgeEndedUserSessions(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('user_sessions').where('expires_at', '<', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
