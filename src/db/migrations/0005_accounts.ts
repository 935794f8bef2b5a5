import type { Kysely } from 'kysely';

/** Merchant users, their signed-in browser sessions, and the sign-in failure counters. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    // Stored lower-cased, so one address is one user whatever case it is typed in.
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_merchant').on('users').column('merchant_id').execute();

  // A session is found by the SHA-256 of its cookie value; the value itself is never stored.
  await db.schema
    .createTable('user_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('user_sessions_user').on('user_sessions').column('user_id').execute();
  await db.schema.createIndex('user_sessions_expires').on('user_sessions').column('expires_at').execute();

  // One row per throttled subject: `email:…` (known or not) or `ip:…`.
  await db.schema
    .createTable('sign_in_throttle')
    .addColumn('subject', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('last_failure_at', 'bigint', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sign_in_throttle_last_failure').on('sign_in_throttle').column('last_failure_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sign_in_throttle').execute();
  await db.schema.dropTable('user_sessions').execute();
  await db.schema.dropTable('users').execute();
}
