import type { Kysely } from 'kysely';

/** Client-credentials clients of merchants' servers, and the keys that sign access tokens. */
export async function up(db: Kysely<any>): Promise<void> {
  // Only the SHA-256 of a client's secret is kept: the secret is 256 random bits, shown once.
  await db.schema
    .createTable('oauth_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('oauth_clients_merchant').on('oauth_clients').column('merchant_id').execute();

  // The private key is sealed under TILL_SECRET_KEY; the public one is published at /.well-known/jwks.json.
  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('private_jwk_sealed', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('retired_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('signing_keys').execute();
  await db.schema.dropTable('oauth_clients').execute();
}
