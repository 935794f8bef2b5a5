import type { Kysely } from 'kysely';

/**
 * A merchant's sessions of one mode, newest first by (created_at, id): the session list of the API
 * pages by a cursor on that pair, and the dashboard's list reads the same order. One index serves
 * both as a short range scan at any table size. It replaces (merchant_id, created_at): every query
 * that read that index names the merchant, the new index's leading column.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('payment_sessions_merchant_mode_created').on('payment_sessions').columns(['merchant_id', 'mode', 'created_at', 'id']).execute();
  await db.schema.dropIndex('payment_sessions_merchant_created').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('payment_sessions_merchant_created').on('payment_sessions').columns(['merchant_id', 'created_at']).execute();
  await db.schema.dropIndex('payment_sessions_merchant_mode_created').execute();
}
