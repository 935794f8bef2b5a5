import { createLocalJWKSet, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { newId } from '../common/ids.ts';
import { openSecret, sealSecret, signingKeyBinding } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';

export const SIGNING_ALG = 'ES256';

export type SigningKey = { kid: string; key: CryptoKey };
type KeySet = {
  signing: SigningKey;
  published: (JWK & { kid: string })[];
  /** The published keys as a verifier's key lookup, imported once per load. */
  verifier: ReturnType<typeof createLocalJWKSet>;
  loadedAt: number;
};

/** Each database's keys, read again at most this often (or at once when a token names an unknown key). */
const RELOAD_MS = 60_000;
const cache = new WeakMap<Db, Promise<KeySet>>();

async function newKey(db: Db, secretKey: Buffer, now: number): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const kid = newId('');
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: 'sig' };
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      alg: SIGNING_ALG,
      private_jwk_sealed: sealSecret(JSON.stringify(await exportJWK(privateKey)), secretKey, signingKeyBinding(kid)),
      public_jwk: JSON.stringify(publicJwk),
      created_at: now,
      retired_at: null,
    })
    .execute();
}

async function load(db: Db, secretKey: Buffer, now: number): Promise<KeySet> {
  let rows = await db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid').execute();
  if (!rows.some((row) => row.retired_at === null)) {
    await newKey(db, secretKey, now);
    rows = await db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid').execute();
  }
  // Two instances starting at once may both make a key: the newest signs, both are published.
  const current = rows.find((row) => row.retired_at === null)!;
  const key = (await importJWK(JSON.parse(openSecret(current.private_jwk_sealed, secretKey, signingKeyBinding(current.kid))), SIGNING_ALG)) as CryptoKey;
  const published = rows.map((row) => JSON.parse(row.public_jwk));
  return { signing: { kid: current.kid, key }, published, verifier: createLocalJWKSet({ keys: published }), loadedAt: now };
}

/** The signing key and published keys, made on first use. `refresh` reloads them now. */
export async function signingKeys(db: Db, secretKey: Buffer, now = Date.now(), refresh = false): Promise<KeySet> {
  const cached = cache.get(db);
  if (cached && !refresh) {
    const set = await cached.catch(() => undefined);
    if (set && now - set.loadedAt < RELOAD_MS) return set;
  }
  const loading = load(db, secretKey, now);
  cache.set(db, loading);
  loading.catch(() => cache.delete(db));
  return loading;
}

/**
 * A new key takes over signing; the old ones stay published until `keepFor` after retirement, so
 * tokens they signed still verify until they expire, and are then removed.
 */
export async function rotateSigningKey(db: Db, secretKey: Buffer, keepForMs: number, now = Date.now()): Promise<string> {
  await db.updateTable('signing_keys').set({ retired_at: now }).where('retired_at', 'is', null).execute();
  await db
    .deleteFrom('signing_keys')
    .where('retired_at', '<', now - keepForMs)
    .execute();
  await newKey(db, secretKey, now);
  return (await signingKeys(db, secretKey, now, true)).signing.kid;
}
