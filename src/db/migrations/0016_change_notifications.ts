import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * On PostgreSQL every committed update or delete of a payment session or a merchant notifies
 * `till_changes` (db/changes.ts CHANGES_CHANNEL) with `<table>:<id>`, whoever wrote it (an
 * instance, the CLI, psql), so every instance drops the answers it cached from that row. SQLite
 * needs nothing here: other processes' commits show in `PRAGMA data_version`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`CREATE FUNCTION till_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_notify('till_changes', TG_TABLE_NAME || ':' || OLD.id); RETURN NULL; END $$`.execute(db);
  for (const table of ['payment_sessions', 'merchants'])
    await sql`CREATE TRIGGER ${sql.raw(`${table}_notify_change`)} AFTER UPDATE OR DELETE ON ${sql.table(table)}
      FOR EACH ROW EXECUTE FUNCTION till_notify_change()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const table of ['payment_sessions', 'merchants']) await sql`DROP TRIGGER ${sql.raw(`${table}_notify_change`)} ON ${sql.table(table)}`.execute(db);
  await sql`DROP FUNCTION till_notify_change()`.execute(db);
}
