import type { Kysely } from 'kysely';

/**
 * A restricted API key lists the scopes it may use (space-separated, as OAuth scopes are written);
 * NULL is a full key, as every key made before. Scopes are set when a key is made and never
 * changed, so the keys remembered by merchants/api-keys.ts need no new notification.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('scopes').execute();
}
