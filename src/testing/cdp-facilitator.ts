// A stand-in for Coinbase's hosted x402 facilitator (https://api.cdp.coinbase.com/platform/v2/x402),
// built from what Coinbase publishes, not from what Till sends: the CDP API description
// (`openapi.yaml` of coinbase/cdp-sdk: the x402 verify/settle bodies, `Description` maxLength 500,
// the EVM signature pattern, the `Error` schema {errorType, errorMessage, correlationId}, the 402
// `payment_method_required` of settle), the SDK's JWTs (`generateJwt` of @coinbase/cdp-sdk: ES256
// with an EC key in PKCS#8 PEM, EdDSA with an Ed25519 key given as base64 of 64 bytes), and what
// the public x402 issues report of its answers (a 501-character description → 400 invalid_request
// naming no field; an amount under 1,000 base units → 400 {isValid: false, invalidReason:
// "invalid_payload"}; rate limits → 429 rate_limit_exceeded). Payments it passes are carried out by
// the sandbox's facilitator on the sandbox chain, whose answers are put in CDP's shape (its
// rejections are 400s). Coinbase's own checks may be stricter than these.
import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';

/** The longest life CDP's SDK gives a JWT (its default `expiresIn`); a longer one is refused. */
export const CDP_JWT_MAX_LIFETIME_SECONDS = 120;
/** `Description` in CDP's API description: `maxLength: 500`. */
export const CDP_DESCRIPTION_MAX_LENGTH = 500;
/** The smallest amount the hosted facilitator takes, in base units ($0.001 of USDC), as its answers show. */
export const CDP_MIN_AMOUNT = 1000n;
/** CDP's rate limit answer body (docs: rate limits of the v2 API). */
export const CDP_RATE_LIMITED = { errorType: 'rate_limit_exceeded', errorMessage: 'Rate limit exceeded. Please try again later.' };
/** The settle answer once the month's free settlements are used without a payment method (openapi: settle 402). */
export const CDP_PAYMENT_METHOD_REQUIRED = {
  errorType: 'payment_method_required',
  errorMessage:
    'A valid payment method is required to complete this operation. Please add a payment method to your account at https://portal.cdp.coinbase.com.',
};

export type CdpApiKey = {
  /** The key id (`kid` and `sub` of its JWTs); a UUID, as CDP's portal gives. */
  id: string;
  algorithm: 'EdDSA' | 'ES256';
  /** The secret as the portal hands it out: base64 of seed and public key (Ed25519), or PKCS#8 PEM (ECDSA). */
  secret: string;
  /** An ECDSA key's secret as SEC1 PEM (`-----BEGIN EC PRIVATE KEY-----`), as the portal has handed out too. */
  secretSec1?: string;
  publicKey: KeyObject;
};

/** A throwaway CDP API key: Ed25519 (the portal's default) or ECDSA P-256. */
export function generateCdpApiKey(algorithm: 'EdDSA' | 'ES256' = 'EdDSA'): CdpApiKey {
  if (algorithm === 'ES256') {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return {
      id: randomUUID(),
      algorithm,
      secret: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      secretSec1: privateKey.export({ type: 'sec1', format: 'pem' }).toString(),
      publicKey,
    };
  }
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const seedAndPublic = Buffer.concat([Buffer.from(jwk.d!, 'base64url'), Buffer.from(jwk.x!, 'base64url')]);
  return { id: randomUUID(), algorithm, secret: seedAndPublic.toString('base64'), publicKey };
}

export type CdpAuthVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Checks an Authorization header as the stand-in for CDP does: `Bearer <JWT>` signed by one of
 * `keys` with its algorithm (ES256 or EdDSA), header kid = key id, iss "cdp", sub = key id, nbf and
 * exp present and at most 120 s apart, not expired, and `uris` containing exactly
 * "<METHOD> <host><path>" of this request.
 */
export async function verifyCdpAuthorization(
  authorization: string | undefined,
  request: { method: string; host: string; path: string },
  keys: ReadonlyArray<Pick<CdpApiKey, 'id' | 'algorithm' | 'publicKey'>>,
  now: Date = new Date(),
): Promise<CdpAuthVerdict> {
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (!match?.[1]) return { ok: false, reason: authorization ? 'the Authorization header is not "Bearer <JWT>"' : 'no Authorization header' };
  const token = match[1];
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return { ok: false, reason: 'the JWT header cannot be decoded' };
  }
  const key = keys.find((k) => k.id === header.kid);
  if (!key) return { ok: false, reason: `unknown API key id (kid ${String(header.kid)})` };
  if (header.alg !== key.algorithm) return { ok: false, reason: `alg ${String(header.alg)} is not the key's ${key.algorithm}` };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key.publicKey, {
      algorithms: [key.algorithm],
      issuer: 'cdp',
      subject: key.id,
      requiredClaims: ['nbf', 'exp'],
      currentDate: now,
    }));
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, reason: 'the JWT has expired' };
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) return { ok: false, reason: 'the JWT signature does not verify with the API key' };
    if (error instanceof joseErrors.JOSEError) return { ok: false, reason: `the JWT is refused: ${error.code}: ${error.message}` };
    return { ok: false, reason: 'the JWT cannot be verified' };
  }
  const { nbf, exp, uris } = payload;
  if (typeof nbf !== 'number' || typeof exp !== 'number') return { ok: false, reason: 'nbf and exp must be numbers' };
  if (exp - nbf > CDP_JWT_MAX_LIFETIME_SECONDS || exp <= nbf) {
    return { ok: false, reason: `the JWT lives ${exp - nbf} s; at most ${CDP_JWT_MAX_LIFETIME_SECONDS} s is accepted` };
  }
  const expected = `${request.method.toUpperCase()} ${request.host}${request.path}`;
  if (!Array.isArray(uris) || !uris.includes(expected)) {
    return { ok: false, reason: `uris ${JSON.stringify(uris)} does not contain "${expected}"` };
  }
  return { ok: true };
}

/** One answer as the stand-in sends it. */
export type CdpAnswer = { status: number; body: string; headers: Record<string, string> };

/** An answer in CDP's `Error` schema, with the correlation id its support asks for. */
export function cdpError(status: number, error: { errorType: string; errorMessage: string }, headers: Record<string, string> = {}): CdpAnswer {
  return json(status, { ...error, correlationId: newCorrelationId() }, headers);
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): CdpAnswer {
  return { status, body: JSON.stringify(body), headers: { 'content-type': 'application/json; charset=utf-8', ...headers } };
}

const newCorrelationId = () => `${randomUUID().replaceAll('-', '').slice(0, 16)},${randomUUID().replaceAll('-', '').slice(0, 16)}`;

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** The JSON Schema length of a string: code points. */
const codePoints = (value: string) => Array.from(value).length;

/**
 * CDP's checks of a verify or settle body, before any payment is looked at: what the API
 * description makes a 400 `invalid_request` (naming no field, as the hosted facilitator answers),
 * and the amount floor, refused as the payment's own rejection. Undefined: the body may go on.
 */
export function cdpRequestProblem(endpoint: 'verify' | 'settle', raw: string): CdpAnswer | undefined {
  let body: Record<string, unknown> | undefined;
  try {
    body = record(JSON.parse(raw));
  } catch {
    body = undefined;
  }
  const invalid = (what: string) =>
    cdpError(400, { errorType: 'invalid_request', errorMessage: `'${what}' is invalid: must match one of [x402V2PaymentPayload, x402V1PaymentPayload]` });
  if (!body) return cdpError(400, { errorType: 'invalid_request', errorMessage: 'request body must be a JSON object' });
  if (body.x402Version !== 1 && body.x402Version !== 2)
    return cdpError(400, { errorType: 'invalid_request', errorMessage: "'x402Version' must be one of [1, 2]" });
  const payload = record(body.paymentPayload);
  const requirements = record(body.paymentRequirements);
  if (!payload) return invalid('paymentPayload');
  if (!requirements) return invalid('paymentRequirements');
  const resource = record(payload.resource);
  for (const description of [resource?.description, requirements.description])
    if (typeof description === 'string' && codePoints(description) > CDP_DESCRIPTION_MAX_LENGTH) return invalid('paymentPayload');
  const exact = record(payload.payload);
  const signature = exact?.signature;
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]{130,}$/.test(signature)) return invalid('paymentPayload');
  const amount = requirements.amount ?? requirements.maxAmountRequired;
  if (typeof amount !== 'string' || !/^\d+$/.test(amount)) return invalid('paymentRequirements');
  if (BigInt(amount) < CDP_MIN_AMOUNT) {
    const payer = record(exact?.authorization)?.from;
    return endpoint === 'verify'
      ? json(400, { isValid: false, invalidReason: 'invalid_payload', payer })
      : json(400, { success: false, errorReason: 'invalid_payload', payer, transaction: '', network: requirements.network });
  }
  return undefined;
}

/**
 * The sandbox facilitator's answer as CDP gives it: a verify or settle rejection (200 with
 * isValid/success false and no transaction) is a 400 of the same body; an error body gets a
 * correlation id. Answers of the sandbox's faults that are not the facilitator's JSON stay as they are.
 */
export function inCdpShape(endpoint: 'verify' | 'settle' | 'supported', status: number, raw: string, headers: Record<string, string>): CdpAnswer {
  let body: Record<string, unknown> | undefined;
  try {
    body = record(JSON.parse(raw));
  } catch {
    return { status, body: raw, headers };
  }
  if (!body) return { status, body: raw, headers };
  const rejected =
    status === 200 && ((endpoint === 'verify' && body.isValid === false) || (endpoint === 'settle' && body.success === false && !body.transaction));
  if (rejected) return json(400, body);
  if (status >= 400 && typeof body.errorType === 'string' && body.correlationId === undefined)
    return json(status, { ...body, correlationId: newCorrelationId() });
  return json(status, body);
}
