import { type Kysely, sql } from 'kysely';

/**
 * Coding agents' authorizations (OAuth 2.1 for the MCP server): the grant a merchant gave a
 * client, the authorization requests waiting for consent, and the one-time secrets (codes and
 * refresh tokens) issued under a grant.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One active grant per merchant and client: consent adds scopes to it; revoking ends it.
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema
    .createIndex('oauth_grants_active')
    .on('oauth_grants')
    .columns(['merchant_id', 'client_id'])
    .unique()
    .where(sql.ref('revoked_at'), 'is', null)
    .execute();

  // The id is the unguessable handle in the consent page's URL; the user is bound when first shown.
  await db.schema
    .createTable('oauth_authorization_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('state', 'text')
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema.createIndex('oauth_authorization_requests_expires').on('oauth_authorization_requests').column('expires_at').execute();

  // Codes and refresh tokens, found by the SHA-256 of the secret; consumed at most once.
  await db.schema
    .createTable('oauth_grant_secrets')
    .addColumn('secret_hash', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema.createIndex('oauth_grant_secrets_grant').on('oauth_grant_secrets').column('grant_id').execute();
  await db.schema.createIndex('oauth_grant_secrets_expires').on('oauth_grant_secrets').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_grant_secrets').execute();
  await db.schema.dropTable('oauth_authorization_requests').execute();
  await db.schema.dropTable('oauth_grants').execute();
}
