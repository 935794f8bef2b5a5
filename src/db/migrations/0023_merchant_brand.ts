import type { Kysely } from 'kysely';

/**
 * `merchant_brands`: a merchant's logo and accent colour, shown on its hosted payment pages and
 * receipts in both modes. The logo (at most 256 KB, checked by content) is kept in the row as
 * base64 text, the same on both engines, with the type read from its bytes, its size in pixels and
 * the SHA-256 of its bytes, which names it in its URL (`/brand/logo/{hash}`, looked up by it).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('merchant_brands')
    .addColumn('merchant_id', 'text', (c) => c.primaryKey().references('merchants.id'))
    .addColumn('accent_color', 'text')
    .addColumn('logo_base64', 'text')
    .addColumn('logo_type', 'text')
    .addColumn('logo_hash', 'text')
    .addColumn('logo_width', 'integer')
    .addColumn('logo_height', 'integer')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('merchant_brands_logo_hash').on('merchant_brands').column('logo_hash').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('merchant_brands').execute();
}
