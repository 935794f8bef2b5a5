import type { Kysely } from 'kysely';

/**
 * The dashboard's orders list pages by (settled_at, id) with a cursor, filtered by status or not: one
 * index per shape, so a page is a short range scan whatever the number of orders.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Superseded by the first index below, of which it is a prefix.
  await db.schema.dropIndex('payments_merchant_settled').execute();
  await db.schema.createIndex('payments_merchant_status_orders').on('payments').columns(['merchant_id', 'status', 'settled_at', 'id']).execute();
  await db.schema.createIndex('payments_merchant_orders').on('payments').columns(['merchant_id', 'settled_at', 'id']).execute();
  // The orders of one session (the session filter, an orderId search), by status.
  await db.schema.createIndex('payments_session_orders').on('payments').columns(['session_id', 'status', 'settled_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payments_session_orders').execute();
  await db.schema.dropIndex('payments_merchant_orders').execute();
  await db.schema.dropIndex('payments_merchant_status_orders').execute();
  await db.schema.createIndex('payments_merchant_settled').on('payments').columns(['merchant_id', 'status', 'settled_at']).execute();
}
