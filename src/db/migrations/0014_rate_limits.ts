import type { Kysely } from 'kysely';

/**
 * Request limits counted in the database, so every instance on it counts the same requests: one
 * row per limit, key and fixed window, its `hits` raised by one atomic upsert per request. Rows
 * whose window has ended are purged by the periodic sweep (`expires_at`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('limit_name', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('hits', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pk', ['limit_name', 'subject', 'window_start'])
    .execute();
  await db.schema.createIndex('rate_limit_windows_expires').on('rate_limit_windows').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('rate_limit_windows').execute();
}
