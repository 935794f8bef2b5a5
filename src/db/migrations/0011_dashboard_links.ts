import type { Kysely } from 'kysely';

/**
 * The dashboard's Get paid and Payment links pages: when an API key was last used (written at most
 * once a minute per key), and payment links the merchant archived (hidden from the list, no longer
 * payable). The links list reads the existing (merchant_id, created_at) index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
  await db.schema.alterTable('payment_sessions').addColumn('archived_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment_sessions').dropColumn('archived_at').execute();
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute();
}
