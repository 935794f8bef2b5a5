import { type Kysely, type Migration, sql } from 'kysely';
import { openSecret, type SealedWebhookColumn, sealSecret, webhookSecretBinding } from '../../common/secrets.ts';

const SEALED: SealedWebhookColumn[] = ['webhook_key_sealed', 'signing_secret_sealed', 'previous_signing_secret_sealed'];
const COLUMNS = [
  'merchant_id',
  'mode',
  'url',
  'events',
  'webhook_key_sealed',
  'signing_secret_sealed',
  'previous_signing_secret_sealed',
  'previous_signing_secret_expires_at',
  'created_at',
  'updated_at',
  'disabled_at',
  'disabled_reason',
];

/**
 * A webhook endpoint per merchant **and mode**: test and live side by side, each with its own URL,
 * key and signing secret. The table is made again with (merchant_id, mode) as its key (SQLite cannot
 * change a primary key in place), every row kept; a live endpoint's secrets are sealed again bound to
 * its mode, so a test endpoint's sealed value copied into the live row no longer opens. Down keeps
 * one endpoint per merchant: the live one where a merchant has both.
 */
export function webhookEndpointModes(secretKey: Buffer | undefined): Migration {
  const reseal = async (db: Kysely<any>, from: 'sandbox' | 'live', to: 'sandbox' | 'live') => {
    const rows = await db
      .selectFrom('webhook_endpoints')
      .select(['merchant_id', ...SEALED])
      .where('mode', '=', 'live')
      .execute();
    if (rows.length === 0) return;
    if (!secretKey) throw new Error('migration 0030_webhook_endpoint_modes re-seals live webhook secrets and needs TILL_SECRET_KEY: run till migrate');
    for (const row of rows)
      for (const column of SEALED) {
        const sealed = row[column] as string | null;
        if (sealed === null) continue;
        const value = sealSecret(
          openSecret(sealed, secretKey, webhookSecretBinding(row.merchant_id, column, from)),
          secretKey,
          webhookSecretBinding(row.merchant_id, column, to),
        );
        await sql`UPDATE webhook_endpoints SET ${sql.ref(column)} = ${value} WHERE merchant_id = ${row.merchant_id} AND mode = 'live'`.execute(db);
      }
  };
  const remake = async (db: Kysely<any>, primaryKey: { name: string; columns: string[] }, keep: ReturnType<typeof sql>) => {
    await db.schema
      .createTable('webhook_endpoints_next')
      .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
      .addColumn('mode', 'text', (c) => c.notNull().defaultTo('sandbox'))
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('webhook_key_sealed', 'text', (c) => c.notNull())
      .addColumn('signing_secret_sealed', 'text', (c) => c.notNull())
      .addColumn('previous_signing_secret_sealed', 'text')
      .addColumn('previous_signing_secret_expires_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('disabled_at', 'bigint')
      .addColumn('disabled_reason', 'text')
      .addPrimaryKeyConstraint(primaryKey.name, primaryKey.columns as never)
      .execute();
    const columns = sql.join(COLUMNS.map((column) => sql.ref(column)));
    await sql`INSERT INTO webhook_endpoints_next (${columns}) SELECT ${columns} FROM webhook_endpoints ${keep}`.execute(db);
    await db.schema.dropTable('webhook_endpoints').execute();
    await db.schema.alterTable('webhook_endpoints_next').renameTo('webhook_endpoints').execute();
  };
  return {
    async up(db) {
      await remake(db, { name: 'webhook_endpoints_merchant_mode_pkey', columns: ['merchant_id', 'mode'] }, sql``);
      await reseal(db, 'sandbox', 'live');
    },
    async down(db) {
      await reseal(db, 'live', 'sandbox');
      await remake(
        db,
        { name: 'webhook_endpoints_merchant_pkey', columns: ['merchant_id'] },
        sql`e WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints l WHERE l.merchant_id = e.merchant_id AND l.mode = 'live' AND e.mode = 'sandbox')`,
      );
    },
  };
}
