import { type Kysely, sql } from 'kysely';

/**
 * Payment links a merchant lists for agents: their challenges carry x402's `bazaar` description and
 * `GET /.well-known/x402` lists them. Off unless the merchant turns it on. The manifest walks the
 * few discoverable sessions of one mode by id, through an index of those sessions only.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('payment_sessions')
    .addColumn('discoverable', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`CREATE INDEX payment_sessions_discoverable ON payment_sessions (mode, id) WHERE discoverable = 1`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('payment_sessions_discoverable').execute();
  await db.schema.alterTable('payment_sessions').dropColumn('discoverable').execute();
}
