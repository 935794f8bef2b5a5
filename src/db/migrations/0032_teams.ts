import type { Kysely } from 'kysely';

/**
 * Teams: each user has a role (accounts/roles.ts; every existing user becomes an owner), invitations
 * by email (`invitations`: the token stored as its SHA-256, single use, 7 days), and the activity
 * log, which `merchant_events` becomes: who (a user, a coding agent, the operator) changed what, in
 * which mode, from which address and browser, read newest first by merchant.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('owner'))
    .execute();
  await db.schema.createIndex('users_merchant_role').on('users').columns(['merchant_id', 'role']).execute();
  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('accepted_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('invitations_merchant').on('invitations').columns(['merchant_id', 'created_at']).execute();
  for (const column of ['mode', 'actor', 'actor_id', 'actor_label', 'ip', 'user_agent'])
    await db.schema.alterTable('merchant_events').addColumn(column, 'text').execute();
  await db.schema.createIndex('merchant_events_merchant_created').on('merchant_events').columns(['merchant_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('merchant_events_merchant_created').execute();
  for (const column of ['user_agent', 'ip', 'actor_label', 'actor_id', 'actor', 'mode'])
    await db.schema.alterTable('merchant_events').dropColumn(column).execute();
  await db.schema.dropTable('invitations').execute();
  await db.schema.dropIndex('users_merchant_role').execute();
  await db.schema.alterTable('users').dropColumn('role').execute();
}
