import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Claims and resolutions of payments move this counter on the session row itself, so the
  // expiry sweeper, updates and claims are serialised by that row on both engines.
  await db.schema
    .alterTable('payment_sessions')
    .addColumn('payments_in_progress', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('payment_quotes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('payment_sessions.id'))
    .addColumn('session_version', 'integer', (c) => c.notNull())
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('rate', 'text', (c) => c.notNull())
    .addColumn('rate_source', 'text', (c) => c.notNull())
    .addColumn('usdc_amount', 'bigint', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payment_quotes_lookup').on('payment_quotes').columns(['session_id', 'usdc_amount', 'expires_at']).execute();

  await db.schema
    .createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('payment_sessions.id'))
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('quote_id', 'text', (c) => c.notNull().references('payment_quotes.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    // 1 for a TRANSIENT session's payment: at most one such row may be PENDING or SUCCESS.
    .addColumn('exclusive', 'integer', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('valid_after', 'bigint', (c) => c.notNull())
    .addColumn('valid_before', 'bigint', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('rate', 'text', (c) => c.notNull())
    .addColumn('public_order_id', 'text', (c) => c.unique())
    .addColumn('tx_hash', 'text')
    .addColumn('block_number', 'bigint')
    .addColumn('failure_reason', 'text')
    .addColumn('settle_response', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('settled_at', 'bigint')
    .addColumn('finalized_at', 'bigint')
    .execute();
  // An EIP-3009 authorization (from, nonce) is claimed once, ever.
  await db.schema.createIndex('payments_authorization').unique().on('payments').columns(['payer', 'nonce']).execute();
  await db.schema
    .createIndex('payments_one_per_transient_session')
    .unique()
    .on('payments')
    .column('session_id')
    .where(sql<boolean>`exclusive = 1 AND status IN ('PENDING', 'SUCCESS')`)
    .execute();
  await db.schema.createIndex('payments_session').on('payments').columns(['session_id', 'created_at']).execute();
  await db.schema.createIndex('payments_merchant_settled').on('payments').columns(['merchant_id', 'status', 'settled_at']).execute();
  await db.schema.createIndex('payments_status').on('payments').columns(['status', 'updated_at']).execute();
}
