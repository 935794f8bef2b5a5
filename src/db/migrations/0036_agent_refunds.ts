import type { Kysely } from 'kysely';

/**
 * Refunds made without a browser: each refund notes how it was made (`origin`: dashboard, api or
 * mcp) and, when a coding agent made it, its grant, whose refunds of the last 24 hours count
 * against the limits the merchant set on that grant (`oauth_grants.refund_limit_*`, USDC base
 * units; none set: the agent may not refund).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('refunds')
    .addColumn('origin', 'text', (c) => c.notNull().defaultTo('dashboard'))
    .execute();
  await db.schema.alterTable('refunds').addColumn('grant_id', 'text').execute();
  await db.schema.createIndex('refunds_grant').on('refunds').columns(['grant_id', 'created_at']).execute();
  await db.schema.createIndex('refunds_merchant_list').on('refunds').columns(['merchant_id', 'mode', 'created_at', 'id']).execute();
  await db.schema.alterTable('oauth_grants').addColumn('refund_limit_per_refund', 'bigint').execute();
  await db.schema.alterTable('oauth_grants').addColumn('refund_limit_per_day', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('oauth_grants').dropColumn('refund_limit_per_day').execute();
  await db.schema.alterTable('oauth_grants').dropColumn('refund_limit_per_refund').execute();
  await db.schema.dropIndex('refunds_merchant_list').execute();
  await db.schema.dropIndex('refunds_grant').execute();
  await db.schema.alterTable('refunds').dropColumn('grant_id').execute();
  await db.schema.alterTable('refunds').dropColumn('origin').execute();
}
