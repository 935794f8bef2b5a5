import type { Kysely } from 'kysely';

/**
 * After a rotation the previous signing secret keeps signing deliveries beside the new one until
 * `previous_signing_secret_expires_at`, so a receiver can switch secrets without refusing one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite adds no more.
  await db.schema.alterTable('webhook_endpoints').addColumn('previous_signing_secret_sealed', 'text').execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('previous_signing_secret_expires_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('previous_signing_secret_expires_at').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('previous_signing_secret_sealed').execute();
}
