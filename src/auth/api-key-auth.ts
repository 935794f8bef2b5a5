import type { FastifyRequest } from 'fastify';
import type { ApiKeyScope } from '../common/api-key-scopes.ts';
import { TillError } from '../common/errors.ts';
import { type KeyMode, type Mode, modeOfKey } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import { authenticateApiKey } from '../merchants/api-keys.ts';
import { activeClient } from '../oauth/clients.ts';
import { otherMode, unservedMode } from '../oauth/credential-modes.ts';
import { verifyCheckoutToken } from '../oauth/tokens.ts';

export const API_KEY_HEADER = 'x-sc-apikey';

/**
 * `mode`: the credential's mode, which decides what the request reads and writes; `keyHash`: the
 * SHA-256 of the API key it authenticated with (none for a bearer token).
 */
export type AuthenticatedMerchant = {
  merchantId: string;
  walletConfigured: boolean;
  mode: Mode;
  keyHash?: string;
  /** The scopes a client-credentials token was narrowed to; none for an API key or a token asked without `scope`: every scope. */
  scopes?: readonly string[];
};

/**
 * The merchant behind the request: its X-SC-ApiKey, or a client-credentials bearer token for the
 * payment API (audience `{base_url}/checkout`) whose client is still active. Anything else is a 401
 * in the common error shape.
 */
/** The X-SC-ApiKey a request authenticates with, if it comes with one (a bearer token otherwise, or nothing). */
export function presentedApiKey(request: FastifyRequest): string | undefined {
  const header = request.headers[API_KEY_HEADER];
  return typeof header === 'string' && header !== '' ? header.trim() : undefined;
}

/** The mode the presented X-SC-ApiKey's prefix names (`sk_test_…`, `sk_live_…`), before the key itself is checked. */
export function presentedKeyMode(request: FastifyRequest): Mode | undefined {
  const prefix = /^sk_(test|live)_/.exec(presentedApiKey(request) ?? '')?.[1] as KeyMode | undefined;
  return prefix && modeOfKey(prefix);
}

export async function requireMerchant(context: AppContext, request: FastifyRequest): Promise<AuthenticatedMerchant> {
  const header = request.headers[API_KEY_HEADER];
  const presented = Array.isArray(header) ? undefined : header;
  const authorization = request.headers.authorization;
  if (!presented && authorization && /^bearer /i.test(authorization)) {
    const merchant = await requireBearer(context, authorization.slice(7).trim());
    // A token asked with `scope` is narrowed as a restricted key is, by the route's scope.
    if (merchant.scopes) requireKeyScope(merchant, routeScope(request));
    return merchant;
  }
  if (!presented) throw new TillError('unauthorized', { presented: false });
  const key = await authenticateApiKey(context.db, presented.trim(), context.config.modes, context.now());
  if (!key) throw new TillError('unauthorized', { presented: true });
  requireKeyScope(key, routeScope(request));
  return { merchantId: key.merchantId, walletConfigured: key.walletConfigured, mode: modeOfKey(key.mode), keyHash: key.keyHash };
}

/** The scope the request's route needs of a restricted key (its RouteDoc's `scope`). */
export function routeScope(request: FastifyRequest): ApiKeyScope {
  const scope = request.routeOptions.config.apiKeyScope;
  if (!scope) throw new Error(`${request.method} ${request.routeOptions.url} checks an API key but names no scope`);
  return scope;
}

/** A restricted key without the scope is refused (403, naming it); a full key has every scope. */
export function requireKeyScope(key: { scopes?: readonly string[] | undefined }, scope: ApiKeyScope): void {
  if (key.scopes && !key.scopes.includes(scope)) throw new TillError('insufficient_scope', { scope });
}

/** A client-credentials token acts in its client's mode, and only while the deployment serves it. */
async function requireBearer(context: AppContext, token: string): Promise<AuthenticatedMerchant> {
  const claims = await verifyCheckoutToken(context.db, context.config, token, context.now());
  const client = claims && (await activeClient(context.db, claims.clientId));
  if (!client || client.merchantId !== claims.merchantId) throw new TillError('unauthorized', { presented: true, bearer: true });
  const because = otherMode(claims.mode, client.mode) ?? unservedMode(context.config, client.mode);
  if (because) throw new TillError('unauthorized', { presented: true, bearer: true, because });
  return { merchantId: client.merchantId, walletConfigured: client.walletConfigured, mode: client.mode, ...(claims.scopes ? { scopes: claims.scopes } : {}) };
}
