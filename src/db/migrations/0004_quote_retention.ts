import type { Kysely } from 'kysely';

/** Lets the sweep find quotes that ran out long ago and that no payment points at. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('payment_quotes_expires').on('payment_quotes').column('expires_at').execute();
  await db.schema.createIndex('payments_quote').on('payments').column('quote_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payments_quote').execute();
  await db.schema.dropIndex('payment_quotes_expires').execute();
}
