import type { Kysely } from 'kysely';

/**
 * Self-serve sign-up (`sign_ups`): a business name, an address and a password hash waiting for the
 * emailed link (its token stored as its SHA-256, single use, 24 hours); the merchant and its owner
 * are made only when the link is opened.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sign_ups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('business_name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('sign_ups_expires').on('sign_ups').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sign_ups').execute();
}
