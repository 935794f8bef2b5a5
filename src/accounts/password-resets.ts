import { createHash, randomBytes } from 'node:crypto';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { consume, type Limit } from '../limits/limits.ts';
import { queueAccountMail } from '../mail/notices.ts';
import { endAllUserSessions } from './user-sessions.ts';
import { findUser, findUserByEmail, normalizeEmail, passwordProblem, setPassword, type User, UserError } from './users.ts';

/**
 * The owner of `password_resets`: a sign-in link emailed to a user who forgot the password. The
 * token is shown once, in the mail, and stored as its SHA-256; it works once, for 30 minutes, and
 * only for the newest link of its user.
 */
export const RESET_LIFETIME_MS = 30 * 60_000;
export const RESET_PATH = '/sign-in/reset';

/** Asked for one address: a few a day is all a person needs; more floods their inbox. */
const PER_ADDRESS: Limit = { name: 'password_reset_address', points: 3, windowMs: 3_600_000, what: 'password reset mails to this address' };
/** From one client: enough for a shared office, too few to probe which addresses have accounts. */
const PER_IP: Limit = { name: 'password_reset_ip', points: 10, windowMs: 3_600_000, what: 'password reset requests from this address' };

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * A reset asked for `email` from `ip`. The limits count every request, whether or not the address is
 * a user's, so their answer tells nothing either; with a user, a link is made and mailed in one
 * transaction. Throws `rate_limited` over a limit.
 */
export async function requestPasswordReset(db: Db, input: { email: string; ip: string }, at: { now: number; baseUrl: string; mailMode: Mode }): Promise<void> {
  const email = normalizeEmail(input.email);
  await consume(
    db,
    [
      { limit: PER_ADDRESS, subject: hashOf(email) },
      { limit: PER_IP, subject: input.ip },
    ],
    at.now,
  );
  const user = await findUserByEmail(db, email);
  if (!user) return;
  const token = randomBytes(32).toString('base64url');
  const tokenHash = hashOf(token);
  const expiresAt = at.now + RESET_LIFETIME_MS;
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('password_resets')
      .values({ token_hash: tokenHash, user_id: user.id, created_at: at.now, expires_at: expiresAt, used_at: null })
      .execute();
    await queueAccountMail(
      trx,
      user,
      at.mailMode,
      `reset:${tokenHash}`,
      { kind: 'password_reset', email: user.email, link: `${at.baseUrl}${RESET_PATH}?token=${token}`, expiresAt },
      at.now,
    );
  });
}

/** The user a reset link is for, while it can still be used: unused, unexpired, and the user's newest. */
export async function resetLinkUser(db: Db, token: string, now: number): Promise<User | undefined> {
  const row = await db.selectFrom('password_resets').selectAll().where('token_hash', '=', hashOf(token)).executeTakeFirst();
  if (!row || row.used_at !== null || Number(row.expires_at) <= now) return undefined;
  const newer = await db
    .selectFrom('password_resets')
    .select('token_hash')
    .where('user_id', '=', row.user_id)
    .where('created_at', '>', Number(row.created_at))
    .executeTakeFirst();
  return newer ? undefined : findUser(db, row.user_id);
}

/**
 * Uses a reset link: marked used (once: a second use, even racing, finds it used), the new password
 * set, every signed-in browser of the user signed out, and the user told by mail. Undefined when
 * the link cannot be used; a password too weak is refused (UserError) with the link left unused.
 */
export async function completePasswordReset(db: Db, token: string, password: string, at: { now: number; mailMode: Mode }): Promise<User | undefined> {
  // Refused before the link is used up, so a password too short costs the user no new mail.
  const problem = passwordProblem(password);
  if (problem) throw new UserError(`password ${problem}`);
  const user = await resetLinkUser(db, token, at.now);
  if (!user) return undefined;
  const used = await db
    .updateTable('password_resets')
    .set({ used_at: at.now })
    .where('token_hash', '=', hashOf(token))
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (used.numUpdatedRows === 0n) return undefined;
  await setPassword(db, user.email, password, at.now, at.mailMode);
  await endAllUserSessions(db, user.id);
  return user;
}

/** Links past their 30 minutes, removed by the periodic sweep. */
export async function purgeEndedPasswordResets(db: Db, now: number): Promise<number> {
  const result = await db
    .deleteFrom('password_resets')
    .where('expires_at', '<', now - RESET_LIFETIME_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
