import type { Kysely } from 'kysely';

/**
 * Refused payment proofs a merchant can see, against their session: one row per session, payer and
 * refusal code, counting its repeats between the first and the last time it was seen. Bounded by
 * the module that writes it (x402/attempts.ts): the last rows of a session only, none older than
 * the retention the periodic sweep keeps.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payment_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('payment_sessions.id'))
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint')
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payment_attempts_repeat').unique().on('payment_attempts').columns(['session_id', 'payer', 'reason']).execute();
  await db.schema.createIndex('payment_attempts_session_latest').on('payment_attempts').columns(['session_id', 'last_seen_at']).execute();
  await db.schema.createIndex('payment_attempts_last_seen').on('payment_attempts').column('last_seen_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_attempts').execute();
}
