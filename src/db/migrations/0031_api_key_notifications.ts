import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * On PostgreSQL a committed revocation of an API key (or any change to what authenticates it)
 * notifies `till_changes` (db/changes.ts CHANGES_CHANNEL) with `api_keys:<id>`, whoever wrote it, so
 * every instance forgets the keys it remembered (merchants/api-keys.ts) before its next request.
 * Its `last_used_at`, written once a minute per key in use, does not notify. SQLite needs nothing
 * here: other processes' commits show in `PRAGMA data_version`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`CREATE TRIGGER api_keys_notify_change AFTER UPDATE OF revoked_at, key_hash, merchant_id, mode OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION till_notify_change()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`DROP TRIGGER api_keys_notify_change ON api_keys`.execute(db);
}
