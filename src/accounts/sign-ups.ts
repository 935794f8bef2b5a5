import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { consume, type Limit } from '../limits/limits.ts';
import { queueAccountMail } from '../mail/notices.ts';
import { queueMail } from '../mail/outbox.ts';
import { inTransaction, recordActivity } from '../merchants/events.ts';
import { BUSINESS_NAME_MAX_LENGTH, createMerchant } from '../merchants/merchants.ts';
import { emailProblem, findUserByEmail, hashPassword, insertUser, normalizeEmail, passwordProblem, type User, UserError } from './users.ts';

/**
 * The owner of `sign_ups`: self-serve sign-up of a new merchant account (only when the operator
 * turns on TILL_SIGN_UP). A sign-up keeps the business name, the address and the password's hash
 * until the link mailed to that address is opened: only then are the merchant and its owner made.
 * The token is shown once, in the mail, and stored as its SHA-256; it works once, for 24 hours.
 */
export const SIGN_UP_LIFETIME_MS = 24 * 3_600_000;
export const SIGN_UP_PATH = '/sign-up';
export const SIGN_UP_CONFIRM_PATH = '/sign-up/confirm';

/** Asked for one address: a few an hour is all a person needs; more floods their inbox. */
const PER_ADDRESS: Limit = { name: 'sign_up_address', points: 3, windowMs: 3_600_000, what: 'sign-up mails to this address' };
/** From one client: enough for a shared office, too few to flood inboxes or probe addresses. */
const PER_IP: Limit = { name: 'sign_up_ip', points: 10, windowMs: 3_600_000, what: 'sign-ups from this address' };

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** A refused sign-up, naming the form field at fault. */
export class SignUpError extends UserError {
  readonly field: 'name' | 'email' | 'password';
  constructor(field: 'name' | 'email' | 'password', message: string) {
    super(message);
    this.field = field;
  }
}

/** Why a link cannot be used: each has its own words on the refusal page; nothing was made. */
export type SignUpRefusal = 'used' | 'expired' | 'unknown' | 'taken';

/**
 * A sign-up asked for from `ip`: checked (SignUpError naming the field), counted against the limits
 * (`rate_limited` beyond them), then mailed. A new address gets the confirmation link; an address that
 * already signs in to Till gets a mail saying so, and nothing is stored, so the answer to the form is
 * the same for both. The password is hashed either way, so both take as long.
 */
export async function requestSignUp(
  db: Db,
  input: { businessName: string; email: string; password: string; ip: string },
  at: { now: number; baseUrl: string; mailMode: Mode },
): Promise<void> {
  const businessName = input.businessName.trim();
  if (!businessName) throw new SignUpError('name', 'must not be empty');
  if (businessName.length > BUSINESS_NAME_MAX_LENGTH) throw new SignUpError('name', `must be at most ${BUSINESS_NAME_MAX_LENGTH} characters`);
  const email = normalizeEmail(input.email);
  const badEmail = emailProblem(email);
  if (badEmail) throw new SignUpError('email', `${badEmail}: write it as name@example.com`);
  const badPassword = passwordProblem(input.password);
  if (badPassword) throw new SignUpError('password', badPassword);
  await consume(
    db,
    [
      { limit: PER_ADDRESS, subject: hashOf(email) },
      { limit: PER_IP, subject: input.ip },
    ],
    at.now,
  );
  const passwordHash = await hashPassword(input.password);
  const id = newId('sgn_');
  const existing = await findUserByEmail(db, email);
  if (existing) {
    await queueAccountMail(db, existing, at.mailMode, `sign-up:${id}`, { kind: 'sign_up_existing', email }, at.now);
    return;
  }
  const token = randomBytes(32).toString('base64url');
  const expiresAt = at.now + SIGN_UP_LIFETIME_MS;
  await inTransaction(db, async (trx) => {
    await trx
      .insertInto('sign_ups')
      .values({
        id,
        email,
        business_name: businessName,
        password_hash: passwordHash,
        token_hash: hashOf(token),
        created_at: at.now,
        expires_at: expiresAt,
        used_at: null,
      })
      .execute();
    await queueMail(
      trx,
      {
        mode: at.mailMode,
        merchantId: null,
        userId: null,
        cause: `sign-up:${id}`,
        recipient: email,
        data: { kind: 'sign_up', businessName, link: `${at.baseUrl}${SIGN_UP_CONFIRM_PATH}?token=${token}`, expiresAt },
      },
      at.now,
    );
  });
}

type Pending = { id: string; email: string; businessName: string };

/** The sign-up of a link while it can be used, or why not. */
export async function signUpOfToken(db: Db, token: string, now: number): Promise<Pending | { refused: SignUpRefusal }> {
  const row = await db.selectFrom('sign_ups').selectAll().where('token_hash', '=', hashOf(token)).executeTakeFirst();
  if (!row) return { refused: 'unknown' };
  if (row.used_at !== null) return { refused: 'used' };
  if (Number(row.expires_at) <= now) return { refused: 'expired' };
  if (await findUserByEmail(db, row.email)) return { refused: 'taken' };
  return { id: row.id, email: row.email, businessName: row.business_name };
}

/**
 * Opens the account of a sign-up link: the link marked used (once: a second use, even racing, finds
 * it used), the merchant made with the business name, its owner with the address and the password
 * chosen at sign-up, and the opening recorded in its activity log, in one transaction. A link that
 * cannot be used is refused with the reason, and nothing is made.
 */
export async function completeSignUp(
  db: Db,
  input: { token: string; ip: string | null; userAgent: string | null },
  now: number,
): Promise<{ user: User } | { refused: SignUpRefusal }> {
  const pending = await signUpOfToken(db, input.token, now);
  if ('refused' in pending) return pending;
  return inTransaction(db, async (trx) => {
    const row = await trx.selectFrom('sign_ups').select('password_hash').where('id', '=', pending.id).executeTakeFirstOrThrow();
    // The hash moves to the user: the used sign-up keeps none.
    const taken = await trx
      .updateTable('sign_ups')
      .set({ used_at: now, password_hash: '' })
      .where('id', '=', pending.id)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (taken.numUpdatedRows === 0n || !row.password_hash) return { refused: 'used' as const };
    const merchant = await createMerchant(trx, { name: pending.businessName }, now);
    const user = await insertUser(trx, { merchantId: merchant.id, email: pending.email, role: 'owner', passwordHash: row.password_hash }, now);
    await recordActivity(
      trx,
      merchant.id,
      { kind: 'user', id: user.id, label: user.email, ip: input.ip, userAgent: input.userAgent },
      { type: 'account_opened', mode: null, detail: { business: pending.businessName, email: user.email } },
      now,
    );
    return { user };
  });
}

/** Sign-ups past their 24 hours, used or not, removed by the periodic sweep. */
export async function purgeEndedSignUps(db: Db, now: number): Promise<number> {
  const result = await db
    .deleteFrom('sign_ups')
    .where('expires_at', '<', now - SIGN_UP_LIFETIME_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
