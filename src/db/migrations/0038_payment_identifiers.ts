import type { Kysely } from 'kysely';

/**
 * x402's payment-identifier extension: the client's name for a payment, kept on the payment it
 * named for as long as the payment is (never deleted, as its receipt). Unique: of two requests
 * racing with one identifier, only one claim commits, so one identifier is charged at most once.
 * Most payments have none; both engines let NULLs repeat in a unique index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').addColumn('payment_identifier', 'text').execute();
  await db.schema.createIndex('payments_payment_identifier').unique().on('payments').column('payment_identifier').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payments_payment_identifier').execute();
  await db.schema.alterTable('payments').dropColumn('payment_identifier').execute();
}
