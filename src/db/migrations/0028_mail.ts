import type { Kysely } from 'kysely';

/**
 * Email. `mail_outbox`: each mail a row written in the transaction of what caused it, one per cause
 * and recipient (the unique index), sent by the mail worker under a lease, or kept unsent (`KEPT`)
 * when no SMTP server is configured. `mail_preferences`: which notices a merchant's user receives
 * (no row: the defaults). `password_resets`: emailed sign-in links, stored as their SHA-256 only.
 * `mail_receipt_addresses`: where a buyer asked for the receipts of a session or of one payment.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('merchant_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('cause', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema.createIndex('mail_outbox_cause').unique().on('mail_outbox').columns(['cause', 'recipient']).execute();
  await db.schema.createIndex('mail_outbox_due').on('mail_outbox').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('mail_outbox_merchant').on('mail_outbox').columns(['merchant_id', 'created_at']).execute();

  await db.schema
    .createTable('mail_preferences')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('payments', 'integer', (c) => c.notNull())
    .addColumn('refunds', 'integer', (c) => c.notNull())
    .addColumn('attention', 'integer', (c) => c.notNull())
    .addColumn('webhooks', 'integer', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('password_resets')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('password_resets_user').on('password_resets').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('password_resets_expiry').on('password_resets').column('expires_at').execute();

  await db.schema
    .createTable('mail_receipt_addresses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mail_receipt_addresses_session').on('mail_receipt_addresses').columns(['session_id', 'payment_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['mail_receipt_addresses', 'password_resets', 'mail_preferences', 'mail_outbox']) await db.schema.dropTable(table).execute();
}
