import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('merchants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('wallet_address', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_merchant').on('api_keys').columns(['merchant_id', 'created_at']).execute();

  await db.schema
    .createTable('payment_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('order_id', 'text')
    .addColumn('order_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('min_amount_minor', 'bigint')
    .addColumn('editable', 'integer', (c) => c.notNull())
    .addColumn('concept', 'text')
    .addColumn('success_url', 'text')
    .addColumn('cancel_url', 'text')
    .addColumn('fail_url', 'text')
    .addColumn('pay_to', 'text')
    .addColumn('expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();
  // NULLs are distinct on both engines, so sessions without an orderId never collide.
  await db.schema.createIndex('payment_sessions_merchant_order').unique().on('payment_sessions').columns(['merchant_id', 'order_id']).execute();
  await db.schema.createIndex('payment_sessions_expiry').on('payment_sessions').columns(['status', 'expires_at']).execute();
  await db.schema.createIndex('payment_sessions_merchant_created').on('payment_sessions').columns(['merchant_id', 'created_at']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['merchant_id', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').column('expires_at').execute();
}
