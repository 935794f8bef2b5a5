import { type Kysely, sql } from 'kysely';

/**
 * The reconciler asks every few seconds for settled payments not yet final. Without an index of its
 * own that reads every paid order; this partial index holds only the few awaiting finality.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX payments_unfinalized ON payments (settled_at) WHERE status = 'SUCCESS' AND finalized_at IS NULL`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payments_unfinalized').execute();
}
