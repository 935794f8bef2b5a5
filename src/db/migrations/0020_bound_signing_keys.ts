import { type Kysely, type Migration, sql } from 'kysely';
import { openSecret, sealSecret, signingKeyBinding } from '../../common/secrets.ts';

/**
 * Token-signing keys sealed before they were bound to their row: each private key is opened and
 * sealed again with its `kid` as AES-GCM associated data, so a sealed key copied into another row
 * no longer opens. Needs the secret key when there are keys (`till migrate` and `npm start` pass it).
 */
export function boundSigningKeys(secretKey: Buffer | undefined): Migration {
  const reseal = async (db: Kysely<any>, direction: 'bind' | 'unbind') => {
    const rows = await db.selectFrom('signing_keys').select(['kid', 'private_jwk_sealed']).execute();
    if (rows.length === 0) return;
    if (!secretKey) throw new Error('migration 0020_bound_signing_keys re-seals token-signing keys and needs TILL_SECRET_KEY: run till migrate');
    for (const row of rows) {
      const sealed: string = row.private_jwk_sealed;
      // A key already in the form this direction writes is left alone (one made meanwhile).
      if (sealed.startsWith('k1b.') === (direction === 'bind')) continue;
      const binding = signingKeyBinding(row.kid);
      const value =
        direction === 'bind' ? sealSecret(openSecret(sealed, secretKey), secretKey, binding) : sealSecret(openSecret(sealed, secretKey, binding), secretKey);
      // Raw SQL, as migrations write: the table's module is written against the schema of the day.
      await sql`UPDATE signing_keys SET private_jwk_sealed = ${value} WHERE kid = ${row.kid}`.execute(db);
    }
  };
  return { up: (db) => reseal(db, 'bind'), down: (db) => reseal(db, 'unbind') };
}
