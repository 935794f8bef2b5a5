import type { Kysely } from 'kysely';

/**
 * Refunds a merchant makes from its payout wallet to a payment's payer: an EIP-3009 authorization
 * the payout wallet signed, settled through the facilitator, confirmed from the chain. The owner
 * (payments/refunds.ts) never lets the refunds of a payment that are PENDING or SUCCEEDED add up
 * to more than it paid.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('refunds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('from_address', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull().unique())
    .addColumn('valid_before', 'bigint', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('tx_hash', 'text')
    .addColumn('block_number', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('next_check_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('refunds_payment').on('refunds').columns(['payment_id', 'created_at']).execute();
  await db.schema.createIndex('refunds_next_check').on('refunds').columns(['mode', 'next_check_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('refunds').execute();
}
