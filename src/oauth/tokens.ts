import { randomBytes } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import { SIGNING_ALG, signingKeys } from './signing-keys.ts';

/** Client-credentials tokens live a day (spec 5.2: `expires_in: 86400`). */
export const CHECKOUT_TOKEN_SECONDS = 86_400;

/** The one audience a client-credentials token may have: the payment API. */
export const checkoutAudience = (config: Pick<Config, 'baseUrl'>) => `${config.baseUrl}/checkout`;

export const ACCESS_TOKEN_TYPE = 'at+jwt';

/** An RFC 9068 access token for the payment API, signed with the current key. */
export async function issueCheckoutToken(
  db: Db,
  config: Pick<Config, 'baseUrl' | 'authUrl' | 'secretKey'>,
  client: { clientId: string; merchantId: string },
  now: number,
): Promise<{ accessToken: string; expiresIn: number }> {
  const { signing } = await signingKeys(db, config.secretKey, now);
  const issuedAt = Math.floor(now / 1000);
  const accessToken = await new SignJWT({ client_id: client.clientId, merchant_id: client.merchantId })
    .setProtectedHeader({ alg: SIGNING_ALG, kid: signing.kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(config.authUrl)
    .setSubject(client.clientId)
    .setAudience(checkoutAudience(config))
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + CHECKOUT_TOKEN_SECONDS)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(signing.key);
  return { accessToken, expiresIn: CHECKOUT_TOKEN_SECONDS };
}

type Verified = { clientId: string; merchantId: string; expiresAt: number };

/**
 * Tokens already verified, per database, until they expire: a merchant's server sends the same
 * token for a day, and an ES256 verification costs more than the rest of the check. Bounded; the
 * oldest entry goes first.
 */
const verifiedTokens = new WeakMap<Db, Map<string, Verified>>();
const VERIFIED_CACHE_SIZE = 10_000;

function remember(db: Db, token: string, verified: Verified): void {
  let cache = verifiedTokens.get(db);
  if (!cache) {
    cache = new Map();
    verifiedTokens.set(db, cache);
  }
  if (cache.size >= VERIFIED_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(token, verified);
}

/**
 * The client and merchant a token names, when it is ours (signature, issuer, type), for the payment
 * API (audience), and not expired; undefined otherwise. Whether the client is still active is the
 * caller's check.
 */
export async function verifyCheckoutToken(
  db: Db,
  config: Pick<Config, 'baseUrl' | 'authUrl' | 'secretKey'>,
  token: string,
  now: number,
): Promise<{ clientId: string; merchantId: string } | undefined> {
  if (token.length > 4096) return undefined;
  const known = verifiedTokens.get(db)?.get(token);
  if (known && now < known.expiresAt) return { clientId: known.clientId, merchantId: known.merchantId };
  const options = {
    algorithms: [SIGNING_ALG],
    issuer: config.authUrl,
    audience: checkoutAudience(config),
    typ: ACCESS_TOKEN_TYPE,
    currentDate: new Date(now),
    requiredClaims: ['exp', 'sub', 'client_id', 'merchant_id'],
  };
  const attempt = async (refresh: boolean) => {
    const keys = await signingKeys(db, config.secretKey, now, refresh);
    return jwtVerify(token, keys.verifier, options);
  };
  try {
    let verified: Awaited<ReturnType<typeof attempt>>;
    try {
      verified = await attempt(false);
    } catch (error) {
      // A key made by another instance since this one last read them: read again once.
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      verified = await attempt(true);
    }
    const { client_id: clientId, merchant_id: merchantId, sub, exp } = verified.payload;
    if (typeof clientId !== 'string' || typeof merchantId !== 'string' || sub !== clientId || typeof exp !== 'number') return undefined;
    remember(db, token, { clientId, merchantId, expiresAt: exp * 1000 });
    return { clientId, merchantId };
  } catch (error) {
    if (error instanceof errors.JOSEError) return undefined;
    throw error;
  }
}
