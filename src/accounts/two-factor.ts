import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { newId } from '../common/ids.ts';
import { openSecret, sealSecret, sha256Hex } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';
import { base32Encode, matchingStep, newTotpSecret } from './totp.ts';

/**
 * A user's second factors, owner of `user_totp` and `user_recovery_codes` (passkeys are
 * `passkeys.ts`'s). An authenticator is enrolled in two steps: a secret is made (shown as a QR code
 * and as text), then confirmed by a code from it, which also makes the recovery codes, shown once and
 * stored as SHA-256. A code is taken once: the time step of the last one taken is kept, and a code
 * of that step or an earlier one is refused (a replay), on any number of instances, by one
 * conditional update.
 */
export const RECOVERY_CODE_COUNT = 10;

const sealBinding = (userId: string) => `user_totp:${userId}`;

/** Starts (or starts again) an authenticator's enrolment: a new secret, not in force until confirmed. Undefined when one is in force already. */
export async function beginTotpEnrolment(db: Db, secretKey: Buffer, userId: string, now: number): Promise<string | undefined> {
  const secret = newTotpSecret();
  const sealed = sealSecret(secret, secretKey, sealBinding(userId));
  const written = await db
    .insertInto('user_totp')
    .values({ user_id: userId, secret_sealed: sealed, confirmed_at: null, last_step: null, created_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ secret_sealed: sealed, created_at: now }).where('user_totp.confirmed_at', 'is', null))
    .executeTakeFirst();
  return Number(written.numInsertedOrUpdatedRows ?? 0n) > 0 ? secret : undefined;
}

/** The secret of an enrolment under way (made, not confirmed). */
export async function pendingTotpSecret(db: Db, secretKey: Buffer, userId: string): Promise<string | undefined> {
  const row = await db.selectFrom('user_totp').select('secret_sealed').where('user_id', '=', userId).where('confirmed_at', 'is', null).executeTakeFirst();
  return row && openSecret(row.secret_sealed, secretKey, sealBinding(userId));
}

/**
 * Confirms the enrolment with a code of its secret: the authenticator is in force and new recovery
 * codes (replacing any) are answered, to be shown this once. Undefined when the code is not right.
 */
export async function confirmTotp(db: Db, secretKey: Buffer, userId: string, code: string, now: number): Promise<string[] | undefined> {
  const secret = await pendingTotpSecret(db, secretKey, userId);
  const step = secret === undefined ? undefined : matchingStep(secret, code, now);
  if (step === undefined) return undefined;
  return db.transaction().execute(async (trx) => {
    const confirmed = await trx
      .updateTable('user_totp')
      .set({ confirmed_at: now, last_step: step })
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is', null)
      .executeTakeFirst();
    if (confirmed.numUpdatedRows === 0n) return undefined;
    return replaceRecoveryCodes(trx, userId, now);
  });
}

/** The answer to a second factor typed in: taken, not right, or a code already used (its time step, or a used recovery code). */
export type CodeCheck = { taken: 'totp' | 'recovery' } | { refused: 'wrong' | 'replayed' };

/**
 * Checks a typed code: an authenticator's six digits (taken once per time step), or a recovery
 * code (taken once). The caller counts the attempt against the throttle first.
 */
export async function checkSecondFactorCode(db: Db, secretKey: Buffer, userId: string, typed: string, now: number): Promise<CodeCheck> {
  const code = typed.trim();
  if (/^[\d\s]{6,8}$/.test(code)) {
    const row = await db.selectFrom('user_totp').selectAll().where('user_id', '=', userId).where('confirmed_at', 'is not', null).executeTakeFirst();
    const step = row && matchingStep(openSecret(row.secret_sealed, secretKey, sealBinding(userId)), code, now);
    if (step === undefined || !row) return { refused: 'wrong' };
    const taken = await db
      .updateTable('user_totp')
      .set({ last_step: step })
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
      .executeTakeFirst();
    return taken.numUpdatedRows > 0n ? { taken: 'totp' } : { refused: 'replayed' };
  }
  const hash = recoveryCodeHash(code);
  if (!hash) return { refused: 'wrong' };
  const used = await db
    .updateTable('user_recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (used.numUpdatedRows > 0n) return { taken: 'recovery' };
  const spent = await db.selectFrom('user_recovery_codes').select('id').where('user_id', '=', userId).where('code_hash', '=', hash).executeTakeFirst();
  return { refused: spent ? 'replayed' : 'wrong' };
}

/** A recovery code as typed (any case, with or without its dash) to its stored hash; undefined when it cannot be one. */
function recoveryCodeHash(typed: string): string | undefined {
  const plain = typed.toLowerCase().replace(/[\s-]/g, '');
  return /^[a-z2-7]{10}$/.test(plain) ? sha256Hex(`recovery:${plain}`) : undefined;
}

/** Ten new recovery codes (50 random bits each, `xxxxx-xxxxx`), the old ones gone; answered for showing once. */
export async function replaceRecoveryCodes(db: Db, userId: string, now: number): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => base32Encode(randomBytes(7)).slice(0, 10).toLowerCase());
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  await db
    .insertInto('user_recovery_codes')
    .values(codes.map((code) => ({ id: newId('rc_'), user_id: userId, code_hash: recoveryCodeHash(code)!, created_at: now, used_at: null })))
    .execute();
  return codes.map((code) => `${code.slice(0, 5)}-${code.slice(5)}`);
}

export type TotpState = { enrolled: boolean; recoveryCodesLeft: number };

/** Whether the user's authenticator is in force, and how many recovery codes are unused. */
export async function totpState(db: Db, userId: string): Promise<TotpState> {
  const row = await db
    .selectFrom('users')
    .select((eb) => [
      eb.exists(eb.selectFrom('user_totp').select('user_id').where('user_id', '=', userId).where('confirmed_at', 'is not', null)).as('enrolled'),
      eb.selectFrom('user_recovery_codes').select(sql<number>`count(*)`.as('n')).where('user_id', '=', userId).where('used_at', 'is', null).as('left'),
    ])
    .where('id', '=', userId)
    .executeTakeFirst();
  return { enrolled: !!row && !!Number(row.enrolled), recoveryCodesLeft: Number(row?.left ?? 0) };
}

/** Removes the user's authenticator and recovery codes (the user turning it off, or an operator's reset). */
export async function removeTotp(db: Db, userId: string): Promise<boolean> {
  const removed = await db.deleteFrom('user_totp').where('user_id', '=', userId).executeTakeFirst();
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  return removed.numDeletedRows > 0n;
}

/** Whether the user has a second factor (an authenticator or a passkey), and whether the merchant requires one of everyone. */
export type SecondFactorStanding = { enrolled: boolean; required: boolean; passkey: boolean };

export async function secondFactorStanding(db: Db, userId: string): Promise<SecondFactorStanding> {
  const row = await db
    .selectFrom('users')
    .innerJoin('merchants', 'merchants.id', 'users.merchant_id')
    .select((eb) => [
      'merchants.require_two_factor',
      eb.exists(eb.selectFrom('user_totp').select('user_id').where('user_id', '=', userId).where('confirmed_at', 'is not', null)).as('totp'),
      eb.exists(eb.selectFrom('user_passkeys').select('id').where('user_id', '=', userId)).as('passkey'),
    ])
    .where('users.id', '=', userId)
    .executeTakeFirst();
  return {
    enrolled: !!row && (!!Number(row.totp) || !!Number(row.passkey)),
    required: Number(row?.require_two_factor ?? 0) === 1,
    passkey: !!row && !!Number(row.passkey),
  };
}
