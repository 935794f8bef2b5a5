import { type Kysely, sql } from 'kysely';

/**
 * What the reconciler keeps per payment so that every PENDING payment is looked at in turn and none
 * holds back another: when it is looked at next, how often it was, what was found last, the hash a
 * facilitator reported without a definite success, and the block from which its transfer is searched.
 * A payer may have one PENDING payment per session at a time, so a buyer whose payment is being
 * confirmed is never charged for a second one. Settled payments awaiting finality are read
 * least-looked-at first.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite adds no more.
  await db.schema.alterTable('payments').addColumn('next_check_at', 'bigint').execute();
  await db.schema
    .alterTable('payments')
    .addColumn('checks', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('payments').addColumn('checked_at', 'bigint').execute();
  await db.schema.alterTable('payments').addColumn('last_finding', 'text').execute();
  await db.schema.alterTable('payments').addColumn('reported_tx_hash', 'text').execute();
  await db.schema.alterTable('payments').addColumn('search_from_block', 'bigint').execute();
  await sql`UPDATE payments SET next_check_at = updated_at WHERE status = 'PENDING'`.execute(db);
  await sql`CREATE INDEX payments_follow_up ON payments (next_check_at) WHERE next_check_at IS NOT NULL`.execute(db);
  await sql`CREATE UNIQUE INDEX payments_one_pending_per_payer ON payments (session_id, payer) WHERE status = 'PENDING'`.execute(db);
  // Settled payments awaiting finality are looked at least-looked-at first, so none holds back another.
  await sql`DROP INDEX payments_unfinalized`.execute(db);
  await sql`CREATE INDEX payments_unfinalized ON payments (checks, settled_at) WHERE status = 'SUCCESS' AND finalized_at IS NULL`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX payments_unfinalized`.execute(db);
  await sql`CREATE INDEX payments_unfinalized ON payments (settled_at) WHERE status = 'SUCCESS' AND finalized_at IS NULL`.execute(db);
  await db.schema.dropIndex('payments_one_pending_per_payer').execute();
  await db.schema.dropIndex('payments_follow_up').execute();
  for (const column of ['next_check_at', 'checks', 'checked_at', 'last_finding', 'reported_tx_hash', 'search_from_block'])
    await db.schema.alterTable('payments').dropColumn(column).execute();
}
