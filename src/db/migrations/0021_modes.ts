import { type Kysely, sql } from 'kysely';

/** The tables whose rows record the mode they were made in. */
const TABLES = ['payment_sessions', 'payments', 'webhook_endpoints', 'webhook_events'] as const;

/**
 * Modes as data: every session, payment, webhook endpoint and webhook event records the mode of the
 * service that made it (`sandbox` or `live`); rows made before this were made in the sandbox. A
 * service reads and acts on the rows of its own mode only (docs/decisions.md, "Modes as data").
 * An orderId is unique per merchant within a mode, so an order number tried in the sandbox is
 * free again in live.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite adds no more. The default fills the rows already there.
  for (const table of TABLES)
    await db.schema
      .alterTable(table)
      .addColumn('mode', 'text', (c) => c.notNull().defaultTo('sandbox'))
      .execute();
  await db.schema.dropIndex('payment_sessions_merchant_order').execute();
  await db.schema.createIndex('payment_sessions_merchant_mode_order').unique().on('payment_sessions').columns(['merchant_id', 'mode', 'order_id']).execute();
  // `till live prepare` and a live start look for open sandbox sessions (at most the open ones are read).
  await sql`CREATE INDEX payment_sessions_open_mode ON payment_sessions (mode) WHERE status = 'OPEN' AND archived_at IS NULL`.execute(db);
}

/** Down again: refused by the unique index when an orderId is used in both modes by one merchant. */
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payment_sessions_open_mode').execute();
  await db.schema.dropIndex('payment_sessions_merchant_mode_order').execute();
  await db.schema.createIndex('payment_sessions_merchant_order').unique().on('payment_sessions').columns(['merchant_id', 'order_id']).execute();
  for (const table of [...TABLES].reverse()) await db.schema.alterTable(table).dropColumn('mode').execute();
}
