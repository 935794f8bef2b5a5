import type { Kysely } from 'kysely';

/**
 * The merchant's business details shown to buyers and set on the dashboard (support email, website),
 * and `merchant_events`: the merchant's own audit of sensitive changes (the payout wallet), which
 * the dashboard's overview reads back as a notice.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('merchants').addColumn('support_email', 'text').execute();
  await db.schema.alterTable('merchants').addColumn('website_url', 'text').execute();
  await db.schema
    .createTable('merchant_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('user_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('detail', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('merchant_events_merchant').on('merchant_events').columns(['merchant_id', 'type', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('merchant_events').execute();
  await db.schema.alterTable('merchants').dropColumn('website_url').execute();
  await db.schema.alterTable('merchants').dropColumn('support_email').execute();
}
