import { hash, verify } from '@node-rs/argon2';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { queueAccountMail } from '../mail/notices.ts';
import { type Actor, inTransaction, lockMerchant, recordActivity } from '../merchants/events.ts';
import { isRole, type Role } from './roles.ts';
import { endAllUserSessions } from './user-sessions.ts';

export type User = { id: string; merchantId: string; email: string; role: Role; createdAt: number };

export const PASSWORD_MIN_LENGTH = 12;
/** Argon2 hashes any length; a cap keeps one request from costing more than another. */
export const PASSWORD_MAX_LENGTH = 1024;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The one form of an address: trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function emailProblem(email: string): string | undefined {
  if (email.length > 254 || !EMAIL.test(email)) return 'is not an email address';
  return undefined;
}

export function passwordProblem(password: string): string | undefined {
  if (password.length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}

/** Argon2id's cost: the library's default algorithm and its default, OWASP-recommended cost (19 MiB, 2 passes). */
export const PASSWORD_HASH_COST = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
/** Argon2's minimum: for tests only, through `lowerPasswordHashCostForTests`. */
const TEST_PASSWORD_HASH_COST = { memoryCost: 8, timeCost: 1, parallelism: 1 } as const;
let cost: { memoryCost: number; timeCost: number; parallelism: number } = PASSWORD_HASH_COST;

/** The cost new hashes are made with; a hash keeps its own, so any hash verifies whatever the current cost. */
export const passwordHashCost = () => cost;

/**
 * Tests only: new hashes at Argon2's minimum cost. Called by src/testing/password-hash-cost.ts,
 * which the test runs preload when TILL_TEST_PASSWORD_HASH_COST=minimal (scripts/test.ts); the
 * service never calls it and reads no setting for it.
 */
export function lowerPasswordHashCostForTests(): void {
  cost = TEST_PASSWORD_HASH_COST;
}

export const hashPassword = (password: string): Promise<string> => hash(password, cost);

/** Verified against when the email is unknown, so an unknown email costs as long as a wrong password. */
let decoyHash: Promise<string> | undefined;
const decoy = () => {
  decoyHash ??= hashPassword('decoy password that matches nothing');
  return decoyHash;
};

export class UserError extends Error {}

/** A new user of a merchant, an owner unless `role` says otherwise. */
export async function createUser(db: Db, input: { merchantId: string; email: string; password: string; role?: Role }, now = Date.now()): Promise<User> {
  const email = normalizeEmail(input.email);
  const problem = emailProblem(email) ?? passwordProblem(input.password);
  if (problem) throw new UserError(emailProblem(email) ? `email ${problem}` : `password ${problem}`);
  const existing = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  if (existing) throw new UserError(`a user with email ${email} already exists`);
  return insertUser(db, { merchantId: input.merchantId, email, role: input.role ?? 'owner', passwordHash: await hashPassword(input.password) }, now);
}

/** A user whose address and password were checked before (`passwordHash` from hashPassword); the unique address still refuses a second. */
export async function insertUser(db: Db, input: { merchantId: string; email: string; role: Role; passwordHash: string }, now: number): Promise<User> {
  const user: User = { id: newId('usr_'), merchantId: input.merchantId, email: normalizeEmail(input.email), role: input.role, createdAt: now };
  await db
    .insertInto('users')
    .values({
      id: user.id,
      merchant_id: user.merchantId,
      email: user.email,
      role: user.role,
      password_hash: input.passwordHash,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return user;
}

/** A refused change of the team: it would leave the merchant without an owner. */
export class LastOwnerError extends UserError {
  constructor() {
    super('the last owner cannot be removed or given another role: make another member an owner first');
  }
}

/** The merchant's users, owners first, then by email. */
export async function listMembers(db: Db, merchantId: string): Promise<User[]> {
  const rows = await db.selectFrom('users').selectAll().where('merchant_id', '=', merchantId).orderBy('email').execute();
  const order = (role: Role) => ['owner', 'admin', 'developer', 'viewer'].indexOf(role);
  return rows.map(toUser).sort((a, b) => order(a.role) - order(b.role) || a.email.localeCompare(b.email));
}

/** The owners of a merchant other than `userId`, counted inside the statement that needs them. */
const otherOwners = (trx: Db, merchantId: string, userId: string) =>
  trx
    .selectFrom('users')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('merchant_id', '=', merchantId)
    .where('role', '=', 'owner')
    .where('id', '!=', userId);

/**
 * Gives a member of the merchant a role, recorded in the activity log in the same transaction. A
 * change that would leave no owner is refused (LastOwnerError) even when two race: on PostgreSQL the
 * merchant's row is locked first, and on both engines the update itself counts the other owners.
 * The member as it was, or undefined when the merchant has no such user.
 */
export async function changeRole(
  db: Db,
  input: { merchantId: string; userId: string; role: Role; actor: Actor },
  now = Date.now(),
): Promise<{ member: User; changed: boolean } | undefined> {
  return inTransaction(db, async (trx) => {
    await lockMerchant(trx, input.merchantId);
    const row = await trx.selectFrom('users').selectAll().where('id', '=', input.userId).where('merchant_id', '=', input.merchantId).executeTakeFirst();
    if (!row) return undefined;
    const member = toUser(row);
    if (member.role === input.role) return { member, changed: false };
    const demotesOwner = member.role === 'owner';
    const updated = await trx
      .updateTable('users')
      .set({ role: input.role })
      .where('id', '=', member.id)
      .where('role', '=', member.role)
      .$if(demotesOwner, (qb) => qb.where((eb) => eb(otherOwners(trx, input.merchantId, member.id), '>', 0)))
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) throw demotesOwner ? new LastOwnerError() : new UserError('the member changed meanwhile: reload and try again');
    await recordActivity(
      trx,
      input.merchantId,
      input.actor,
      { type: 'role_changed', mode: null, detail: { member: member.email, from: member.role, to: input.role } },
      now,
    );
    return { member, changed: true };
  });
}

/**
 * Removes a member of the merchant for good, recorded in the activity log, in one transaction that
 * `beforeRemoval` shares (it removes what refers to the user and is not this module's: its coding
 * agents' grants). The last owner is never removed (LastOwnerError). Undefined when there is no such member.
 */
export async function removeMember(
  db: Db,
  input: { merchantId: string; userId: string; actor: Actor },
  beforeRemoval: (trx: Db, member: User) => Promise<void>,
  now = Date.now(),
): Promise<User | undefined> {
  return inTransaction(db, async (trx) => {
    await lockMerchant(trx, input.merchantId);
    const row = await trx.selectFrom('users').selectAll().where('id', '=', input.userId).where('merchant_id', '=', input.merchantId).executeTakeFirst();
    if (!row) return undefined;
    const member = toUser(row);
    if (member.role === 'owner') {
      const others = await otherOwners(trx, input.merchantId, member.id).executeTakeFirstOrThrow();
      if (Number(others.count) === 0) throw new LastOwnerError();
    }
    await beforeRemoval(trx, member);
    await endAllUserSessions(trx, member.id);
    const removed = await trx
      .deleteFrom('users')
      .where('id', '=', member.id)
      .$if(member.role === 'owner', (qb) => qb.where((eb) => eb(otherOwners(trx, input.merchantId, member.id), '>', 0)))
      .executeTakeFirst();
    if (removed.numDeletedRows === 0n) throw new LastOwnerError();
    await recordActivity(trx, input.merchantId, input.actor, { type: 'member_removed', mode: null, detail: { member: member.email, role: member.role } }, now);
    return member;
  });
}

/**
 * Sets a new password, and tells the user by mail in the same transaction (listed under `mailMode`),
 * recorded in the activity log as `actor`'s change (the user's own unless given); the caller ends
 * the user's sessions. Undefined when there is no such user.
 */
export async function setPassword(
  db: Db,
  email: string,
  password: string,
  now = Date.now(),
  mailMode: Mode = 'sandbox',
  actor?: Actor,
): Promise<User | undefined> {
  const problem = passwordProblem(password);
  if (problem) throw new UserError(`password ${problem}`);
  const user = await findUserByEmail(db, email);
  if (!user) return undefined;
  const passwordHash = await hashPassword(password);
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', user.id).execute();
    await queueAccountMail(trx, user, mailMode, `password:${user.id}:${now}`, { kind: 'password_changed', email: user.email, at: now }, now);
    const by = actor ?? { kind: 'user', id: user.id, label: user.email, ip: null, userAgent: null };
    await recordActivity(trx, user.merchantId, by, { type: 'password_changed', mode: null, detail: { member: user.email } }, now);
  });
  return user;
}

/** When the user's password was last set (made or changed), in epoch milliseconds. */
export async function passwordSetAt(db: Db, userId: string): Promise<number | undefined> {
  const row = await db.selectFrom('users').select('updated_at').where('id', '=', userId).executeTakeFirst();
  return row ? Number(row.updated_at) : undefined;
}

const toUser = (row: { id: string; merchant_id: string; email: string; role: string; created_at: number }): User => ({
  id: row.id,
  merchantId: row.merchant_id,
  email: row.email,
  // A role this version does not know reads as the least one.
  role: isRole(row.role) ? row.role : 'viewer',
  createdAt: Number(row.created_at),
});

export async function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
  return row && toUser(row);
}

/**
 * Removes a user for good, with its signed-in browser sessions: it can no longer sign in, and its
 * email is free. What else refers to the user (coding-agent grants) is removed first by its owner.
 * False when there was no such user.
 */
export async function removeUser(db: Db, userId: string): Promise<boolean> {
  await endAllUserSessions(db, userId);
  const result = await db.deleteFrom('users').where('id', '=', userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function findUser(db: Db, id: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toUser(row);
}

export async function countUsers(db: Db, merchantId: string): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number | bigint>().as('count'))
    .where('merchant_id', '=', merchantId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * The user whose email and password these are, or undefined. An unknown email is verified
 * against a decoy hash, so both refusals take as long and look the same.
 */
export async function checkPassword(db: Db, email: string, password: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
  const candidate = password.length <= PASSWORD_MAX_LENGTH ? password : '';
  const matches = await verify(row?.password_hash ?? (await decoy()), candidate).catch(() => false);
  return row && matches && candidate ? toUser(row) : undefined;
}
