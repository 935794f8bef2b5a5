import type { Kysely } from 'kysely';

/**
 * A merchant's webhook events of one mode, by (created_at, id): the events API pages by a cursor on
 * that pair, newest or oldest first, and `till listen` follows it forward. One index serves both
 * directions as a short range scan at any table size. It replaces (merchant_id, created_at): every
 * query that read that index names the merchant, the new index's leading column.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('webhook_events_merchant_mode_created').on('webhook_events').columns(['merchant_id', 'mode', 'created_at', 'id']).execute();
  await db.schema.dropIndex('webhook_events_merchant').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('webhook_events_merchant').on('webhook_events').columns(['merchant_id', 'created_at']).execute();
  await db.schema.dropIndex('webhook_events_merchant_mode_created').execute();
}
