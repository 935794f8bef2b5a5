import { type Kysely, type Migration, sql } from 'kysely';
import { openSecret, type SealedWebhookColumn, sealSecret, webhookSecretBinding } from '../../common/secrets.ts';

const COLUMNS: SealedWebhookColumn[] = ['webhook_key_sealed', 'signing_secret_sealed'];

/**
 * Webhook secrets sealed before they were bound to their row: each is opened and sealed again with
 * its merchant and column as AES-GCM associated data, so a sealed value copied into another row or
 * column no longer opens. The secret key is needed: without it, a database that holds webhook
 * endpoints is not migrated (`till migrate` and `npm start` pass TILL_SECRET_KEY).
 */
export function boundWebhookSecrets(secretKey: Buffer | undefined): Migration {
  const reseal = async (db: Kysely<any>, direction: 'bind' | 'unbind') => {
    const rows = await db
      .selectFrom('webhook_endpoints')
      .select(['merchant_id', ...COLUMNS])
      .execute();
    if (rows.length === 0) return;
    if (!secretKey) throw new Error('migration 0018_bound_webhook_secrets re-seals webhook secrets and needs TILL_SECRET_KEY: run till migrate');
    for (const row of rows) {
      const values: Record<string, string> = {};
      for (const column of COLUMNS) {
        // A value already in the form this direction writes is left alone (a row written meanwhile).
        if (row[column].startsWith('k1b.') === (direction === 'bind')) continue;
        // Bound as every endpoint was then: by merchant and column (0030 binds live endpoints to their mode).
        const binding = webhookSecretBinding(row.merchant_id, column, 'sandbox');
        values[column] =
          direction === 'bind'
            ? sealSecret(openSecret(row[column], secretKey), secretKey, binding)
            : sealSecret(openSecret(row[column], secretKey, binding), secretKey);
      }
      // Raw SQL, as migrations write: the table's module is written against the schema of the day.
      for (const [column, value] of Object.entries(values))
        await sql`UPDATE webhook_endpoints SET ${sql.ref(column)} = ${value} WHERE merchant_id = ${row.merchant_id}`.execute(db);
    }
  };
  return { up: (db) => reseal(db, 'bind'), down: (db) => reseal(db, 'unbind') };
}
