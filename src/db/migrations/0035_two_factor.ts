import type { Kysely } from 'kysely';

/**
 * Second factors of merchant users. `user_totp`: a user's authenticator secret (sealed under
 * TILL_SECRET_KEY), confirmed once a code from it was typed, and the last time step used, so a code
 * is taken once. `user_recovery_codes`: the one-use codes shown at enrolment, stored as SHA-256.
 * `user_passkeys`: WebAuthn credentials (public key, signature counter). On `user_sessions`,
 * `second_factor_due` marks a browser past the password that has not given its second factor yet,
 * and `second_factor_at` when it last gave one (a step-up is fresh for a few minutes). On
 * `merchants`, `require_two_factor` sends every user without a second factor to enrol.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user_totp')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'bigint')
    .addColumn('last_step', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('user_recovery_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('user_recovery_codes_user').on('user_recovery_codes').columns(['user_id', 'code_hash']).execute();
  await db.schema
    .createTable('user_passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('user_passkeys_user').on('user_passkeys').columns(['user_id']).execute();
  await db.schema
    .alterTable('user_sessions')
    .addColumn('second_factor_due', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('user_sessions').addColumn('second_factor_at', 'bigint').execute();
  await db.schema
    .alterTable('merchants')
    .addColumn('require_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('merchants').dropColumn('require_two_factor').execute();
  await db.schema.alterTable('user_sessions').dropColumn('second_factor_at').execute();
  await db.schema.alterTable('user_sessions').dropColumn('second_factor_due').execute();
  await db.schema.dropTable('user_passkeys').execute();
  await db.schema.dropTable('user_recovery_codes').execute();
  await db.schema.dropTable('user_totp').execute();
}
