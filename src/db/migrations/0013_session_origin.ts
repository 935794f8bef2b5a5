import type { Kysely } from 'kysely';

/**
 * Where a payment session was created: `api` (E1), `dashboard` (a payment link made on the
 * dashboard) or `mcp` (the MCP tool create_payment_session); null on sessions made before this was
 * recorded. The Notifications page lists a merchant's API sessions newest first, by cursor on
 * (created_at, id): one index makes that page a short range scan at any table size.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment_sessions').addColumn('created_via', 'text').execute();
  await db.schema.createIndex('payment_sessions_merchant_origin').on('payment_sessions').columns(['merchant_id', 'created_via', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payment_sessions_merchant_origin').execute();
  await db.schema.alterTable('payment_sessions').dropColumn('created_via').execute();
}
