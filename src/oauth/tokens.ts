import { randomBytes } from 'node:crypto';
import { errors, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { type KeyMode, keyModeOf, type Mode, modeOfKey } from '../common/modes.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import { SIGNING_ALG, signingKeys } from './signing-keys.ts';

/** Client-credentials tokens live a day (spec 5.2: `expires_in: 86400`). */
export const CHECKOUT_TOKEN_SECONDS = 86_400;
/** Coding agents' access tokens are short-lived (spec 5.3); the refresh token gets the next one. */
export const MCP_TOKEN_SECONDS = 900;

/** The one audience a client-credentials token may have: the payment API. */
export const checkoutAudience = (config: Pick<Config, 'baseUrl'>) => `${config.baseUrl}/checkout`;
/** The one audience (RFC 8707 resource) a coding agent's token may have: the MCP endpoint. */
export const mcpAudience = (config: Pick<Config, 'mcpUrl'>) => `${config.mcpUrl}/mcp`;

export const ACCESS_TOKEN_TYPE = 'at+jwt';

type TokenConfig = Pick<Config, 'baseUrl' | 'authUrl' | 'mcpUrl' | 'secretKey'>;

/** An RFC 9068 access token signed with the current key. */
async function signAccessToken(
  db: Db,
  config: TokenConfig,
  token: { subject: string; audience: string; lifetimeSeconds: number; claims: Record<string, string> },
  now: number,
): Promise<string> {
  const { signing } = await signingKeys(db, config.secretKey, now);
  const issuedAt = Math.floor(now / 1000);
  return new SignJWT(token.claims)
    .setProtectedHeader({ alg: SIGNING_ALG, kid: signing.kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(config.authUrl)
    .setSubject(token.subject)
    .setAudience(token.audience)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + token.lifetimeSeconds)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(signing.key);
}

/**
 * Tokens already verified, per database, until they expire: a merchant's server sends the same
 * token for a day, and an ES256 verification costs more than the rest of the check. Bounded; the
 * oldest entry goes first. What is remembered is only that the signature and claims are good:
 * whether the client or grant is still active is read on every request.
 */
const verifiedTokens = new WeakMap<Db, Map<string, { payload: JWTPayload; audience: string; expiresAt: number }>>();
const VERIFIED_CACHE_SIZE = 10_000;

function remember(db: Db, token: string, audience: string, payload: JWTPayload): void {
  let cache = verifiedTokens.get(db);
  if (!cache) {
    cache = new Map();
    verifiedTokens.set(db, cache);
  }
  if (cache.size >= VERIFIED_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(token, { payload, audience, expiresAt: payload.exp! * 1000 });
}

/**
 * The `mode` claim every token carries (`test` or `live`, as API keys name it): the mode of the client
 * or grant it was issued for. Tokens issued before modes were recorded have none; their client's or
 * grant's mode stands.
 */
function modeClaim(payload: JWTPayload): Mode | undefined | 'malformed' {
  if (payload.mode === undefined) return undefined;
  return payload.mode === 'test' || payload.mode === 'live' ? modeOfKey(payload.mode as KeyMode) : 'malformed';
}

/** The claims of a token that is ours (signature, issuer, type), for this audience, and not expired; undefined otherwise. */
async function verifyAccessToken(
  db: Db,
  config: TokenConfig,
  token: string,
  audience: string,
  requiredClaims: string[],
  now: number,
): Promise<JWTPayload | undefined> {
  if (token.length > 4096) return undefined;
  const known = verifiedTokens.get(db)?.get(token);
  if (known) return known.audience === audience && now < known.expiresAt ? known.payload : undefined;
  const options = {
    algorithms: [SIGNING_ALG],
    issuer: config.authUrl,
    audience,
    typ: ACCESS_TOKEN_TYPE,
    currentDate: new Date(now),
    requiredClaims: ['exp', 'sub', ...requiredClaims],
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
    const { payload } = verified;
    if (typeof payload.exp !== 'number' || requiredClaims.some((claim) => typeof payload[claim] !== 'string')) return undefined;
    remember(db, token, audience, payload);
    return payload;
  } catch (error) {
    if (error instanceof errors.JOSEError) return undefined;
    throw error;
  }
}

/** A day-long token for the payment API, for a merchant's server (client credentials). */
export async function issueCheckoutToken(
  db: Db,
  config: TokenConfig,
  client: { clientId: string; merchantId: string; mode: Mode },
  now: number,
  /** The scopes the token is narrowed to; none: every scope of the payment API. */
  scopes?: readonly string[],
): Promise<{ accessToken: string; expiresIn: number }> {
  const accessToken = await signAccessToken(
    db,
    config,
    {
      subject: client.clientId,
      audience: checkoutAudience(config),
      lifetimeSeconds: CHECKOUT_TOKEN_SECONDS,
      claims: {
        client_id: client.clientId,
        merchant_id: client.merchantId,
        mode: keyModeOf(client.mode),
        ...(scopes === undefined ? {} : { scope: scopes.join(' ') }),
      },
    },
    now,
  );
  return { accessToken, expiresIn: CHECKOUT_TOKEN_SECONDS };
}

/**
 * The client, merchant and mode (when the token names one) of a valid payment API token. Whether
 * the client is still active, and of that mode, is the caller's check.
 */
export async function verifyCheckoutToken(
  db: Db,
  config: TokenConfig,
  token: string,
  now: number,
): Promise<{ clientId: string; merchantId: string; mode: Mode | undefined; scopes: string[] | undefined } | undefined> {
  const payload = await verifyAccessToken(db, config, token, checkoutAudience(config), ['client_id', 'merchant_id'], now);
  const mode = payload && modeClaim(payload);
  if (!payload || payload.sub !== payload.client_id || mode === 'malformed') return undefined;
  if (payload.scope !== undefined && typeof payload.scope !== 'string') return undefined;
  const scopes = payload.scope === undefined ? undefined : payload.scope.split(' ').filter(Boolean);
  return { clientId: payload.client_id as string, merchantId: payload.merchant_id as string, mode, scopes };
}

/** What an MCP token says; `mode` is undefined on a token issued before modes were recorded. */
export type McpTokenClaims = { grantId: string; clientId: string; merchantId: string; userId: string; scopes: string[]; mode: Mode | undefined };

/** A short-lived token for the MCP endpoint, naming its grant (so revoking the grant stops it). */
export async function issueMcpToken(
  db: Db,
  config: TokenConfig,
  grant: McpTokenClaims & { mode: Mode },
  now: number,
): Promise<{ accessToken: string; expiresIn: number }> {
  const accessToken = await signAccessToken(
    db,
    config,
    {
      subject: grant.userId,
      audience: mcpAudience(config),
      lifetimeSeconds: MCP_TOKEN_SECONDS,
      claims: {
        client_id: grant.clientId,
        merchant_id: grant.merchantId,
        grant_id: grant.grantId,
        scope: grant.scopes.join(' '),
        mode: keyModeOf(grant.mode),
      },
    },
    now,
  );
  return { accessToken, expiresIn: MCP_TOKEN_SECONDS };
}

/** The claims of a valid MCP token. Whether its grant is still active is the caller's check. */
export async function verifyMcpToken(db: Db, config: TokenConfig, token: string, now: number): Promise<McpTokenClaims | undefined> {
  const payload = await verifyAccessToken(db, config, token, mcpAudience(config), ['client_id', 'merchant_id', 'grant_id', 'scope'], now);
  const mode = payload && modeClaim(payload);
  if (!payload || mode === 'malformed') return undefined;
  return {
    mode,
    grantId: payload.grant_id as string,
    clientId: payload.client_id as string,
    merchantId: payload.merchant_id as string,
    userId: payload.sub!,
    scopes: (payload.scope as string).split(' ').filter(Boolean),
  };
}
