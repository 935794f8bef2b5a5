// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): an agent's
// client_id is an https URL, and the JSON document served there describes the client.
import type { LookupFunction } from 'node:net';
import { type Dispatcher, request } from 'undici';
import { createGuardedAgent, ForbiddenTargetError, isLoopbackAddress } from '../common/ssrf.ts';
import type { Config } from '../config.ts';

export type ClientMetadata = {
  /** The URL the document was fetched from, equal to the document's own client_id. */
  clientId: string;
  /** The document's client_name, trimmed and at most 100 characters; the client_id's host when it has none. */
  clientName: string;
  redirectUris: string[];
};

/** Why a client_id cannot be used, in words for the person whose agent asked (shown on an error page). */
export class ClientMetadataError extends Error {
  /** The host could not be reached or may not be fetched from (as opposed to a bad answer for one URL). */
  readonly hostFailed: boolean;
  constructor(message: string, options: { hostFailed?: boolean } = {}) {
    super(message);
    this.hostFailed = options.hostFailed ?? false;
  }
}

export type ClientMetadataResolver = {
  /** The client described by the document at clientId, fetched or from the cache; throws ClientMetadataError. */
  resolve(clientId: string): Promise<ClientMetadata>;
  /** Whether resolving clientId now would fetch: a URL that may be fetched, with no answer (good or bad) kept for it or its host. */
  wouldFetch(clientId: string): boolean;
  /** Closes the connections kept to document servers. */
  close(): Promise<void>;
};

export type ClientMetadataResolverOptions = {
  /** Accept http client_ids on loopback hosts and fetch from loopback addresses: local development and tests only. */
  allowLoopbackClients: boolean;
  /** For the whole fetch, headers and body (default 5 s). */
  timeoutMs?: number;
  /** Largest document accepted (default 5 KiB). */
  maxBytes?: number;
  lookup?: LookupFunction;
  now?: () => number;
  /** How long a refusal is kept, for its URL and, when the host failed, for every URL of the host (default 30 s). */
  failureCacheMs?: number;
};

const MAX_CLIENT_ID_LENGTH = 2048;
const MAX_CLIENT_NAME_LENGTH = 100;
const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 5 * 1024;
const MIN_CACHE_SECONDS = 60;
const MAX_CACHE_SECONDS = 24 * 60 * 60;
const DEFAULT_CACHE_SECONDS = 5 * 60;
const MAX_CACHE_ENTRIES = 1000;
const DEFAULT_FAILURE_CACHE_MS = 30_000;

/**
 * The first C0 control character or DEL in a string, as U+XXXX; undefined when there is none. Such
 * a character in a string kept from a document (a name, a URL) is refused: it is never meant, cannot
 * be shown, and U+0000 cannot even be stored in a PostgreSQL text column.
 */
export function controlCharacterIn(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return undefined;
}

/** A host on this machine: localhost, 127.0.0.0/8 or [::1]. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || isLoopbackAddress(hostname);
}

/** A client_id that is an http URL on this machine: an agent under development (TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS). */
export function isLoopbackClientId(clientId: string): boolean {
  if (!URL.canParse(clientId)) return false;
  const url = new URL(clientId);
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

/** The path of a URL as written, before the URL parser removes its dot segments. */
function rawPath(url: string): string {
  return url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '').replace(/[?#].*$/s, '');
}

/** The client_id checked as a URL before anything is fetched from it. */
function parseClientId(clientId: string, allowLoopbackClients: boolean): URL {
  if (clientId.length > MAX_CLIENT_ID_LENGTH)
    throw new ClientMetadataError(`the client_id is ${clientId.length} characters long; at most ${MAX_CLIENT_ID_LENGTH} are accepted`);
  const control = controlCharacterIn(clientId);
  if (control) throw new ClientMetadataError(`the client_id has a control character (${control}), which a URL must not have`);
  if (!URL.canParse(clientId)) throw new ClientMetadataError(`the client_id (${clientId}) is not a URL`);
  const url = new URL(clientId);
  const loopbackHttp = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !(loopbackHttp && allowLoopbackClients))
    throw new ClientMetadataError(
      loopbackHttp
        ? `the client_id (${clientId}) is an http URL on this machine, accepted only for local development (TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS)`
        : `the client_id (${clientId}) is not an https URL`,
    );
  if (clientId.includes('#')) throw new ClientMetadataError(`the client_id (${clientId}) has a fragment (#…), which a client_id must not have`);
  if (url.username || url.password || /^[^:]+:\/\/[^/?#]*@/.test(clientId))
    throw new ClientMetadataError(`the client_id (${clientId}) has a user name or password in it, which a client_id must not have`);
  const path = rawPath(clientId);
  if (path === '' || path === '/')
    throw new ClientMetadataError(`the client_id (${clientId}) has no path; it must name a document, as in https://host/client.json`);
  if (path.split('/').some((segment) => ['.', '..'].includes(segment.replace(/%2e/gi, '.'))))
    throw new ClientMetadataError(`the client_id (${clientId}) has a "." or ".." path segment, which a client_id must not have`);
  return url;
}

/** How long a fetched document may be used: its max-age within [1 min, 24 h], 5 min when it says nothing. */
function cacheSeconds(cacheControl: string | string[] | undefined): number {
  const text = (Array.isArray(cacheControl) ? cacheControl.join(',') : (cacheControl ?? '')).toLowerCase();
  if (/(^|[,\s])(no-store|no-cache)\b/.test(text)) return MIN_CACHE_SECONDS;
  const maxAge = /(?:^|[,\s])max-age\s*=\s*"?(\d+)/.exec(text);
  const seconds = maxAge ? Number(maxAge[1]) : DEFAULT_CACHE_SECONDS;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, seconds));
}

/** Closes the connection without reading the rest of the body; the abort this reports is the one asked for. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** The body, refused as soon as it is known to pass the limit (declared length, or bytes streamed). */
async function readLimited(clientId: string, response: Dispatcher.ResponseData, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => new ClientMetadataError(`the client metadata document at ${clientId} is larger than ${maxBytes} bytes`);
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    discard(response.body);
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) {
      discard(response.body);
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The document's JSON object, fetched through the SSRF guard within the time and size limits. */
async function fetchDocument(
  dispatcher: Dispatcher,
  clientId: string,
  limits: { timeoutMs: number; maxBytes: number },
): Promise<{ document: Record<string, unknown>; maxAgeSeconds: number }> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  let response: Dispatcher.ResponseData;
  let body: Buffer;
  try {
    response = await request(clientId, {
      dispatcher,
      method: 'GET',
      headers: { accept: 'application/json' },
      signal: deadline,
    });
    if (response.statusCode !== 200) {
      discard(response.body);
      const redirect = response.statusCode >= 300 && response.statusCode < 400;
      throw new ClientMetadataError(
        `the client metadata document at ${clientId} answered HTTP ${response.statusCode}${redirect ? ' (a redirect, which is not followed)' : ''} instead of 200`,
      );
    }
    body = await readLimited(clientId, response, limits.maxBytes);
  } catch (error) {
    if (error instanceof ClientMetadataError) throw error;
    const hostFailed = { hostFailed: true };
    if (deadline.aborted)
      throw new ClientMetadataError(`the client metadata document at ${clientId} was not received within ${limits.timeoutMs} ms`, hostFailed);
    const cause = (error as { cause?: unknown }).cause;
    const refusal = [error, cause].find((e) => e instanceof ForbiddenTargetError);
    if (refusal) throw new ClientMetadataError(`the client_id's host may not be fetched from: ${refusal.message}`, hostFailed);
    throw new ClientMetadataError(
      `the client metadata document at ${clientId} could not be fetched: ${(cause as Error | undefined)?.message ?? (error as Error).message}`,
      hostFailed,
    );
  }
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ClientMetadataError(`the client metadata document at ${clientId} is not JSON`);
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw new ClientMetadataError(`the client metadata document at ${clientId} is not a JSON object`);
  return { document: document as Record<string, unknown>, maxAgeSeconds: cacheSeconds(response.headers['cache-control']) };
}

/** A redirect URI an agent may use: https, or http on this machine (a native app's loopback callback, RFC 8252). */
function checkRedirectUri(uri: unknown): string {
  if (typeof uri === 'string' && controlCharacterIn(uri))
    throw new ClientMetadataError(`the document's redirect_uris has a control character (${controlCharacterIn(uri)}) in ${JSON.stringify(uri)}`);
  if (typeof uri !== 'string' || !URL.canParse(uri))
    throw new ClientMetadataError(`the document's redirect_uris has ${JSON.stringify(uri)}, which is not an absolute URL`);
  const url = new URL(uri);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname)))
    throw new ClientMetadataError(`the document's redirect_uris has ${uri}, which is neither https nor http on a loopback address`);
  if (uri.includes('#')) throw new ClientMetadataError(`the document's redirect_uris has ${uri}, which has a fragment (#…)`);
  return uri;
}

/** The document's fields checked for a public client of the authorization code flow. */
function checkDocument(clientId: string, url: URL, document: Record<string, unknown>): ClientMetadata {
  if (document.client_id !== clientId)
    throw new ClientMetadataError(`the document's client_id (${String(document.client_id ?? 'missing')}) is not the URL it was fetched from (${clientId})`);
  const redirectUris = document.redirect_uris;
  if (!Array.isArray(redirectUris) || redirectUris.length === 0)
    throw new ClientMetadataError('the document has no redirect_uris (a non-empty list of the URLs the agent receives its authorization at)');
  for (const secret of ['client_secret', 'client_secret_expires_at'])
    if (secret in document) throw new ClientMetadataError(`the document has a ${secret}; a client identified by a metadata document has no secret`);
  const authMethod = document.token_endpoint_auth_method ?? 'none';
  if (authMethod !== 'none')
    throw new ClientMetadataError(`the document's token_endpoint_auth_method is ${JSON.stringify(authMethod)}; only "none" is accepted (a public client)`);
  const grantTypes = document.grant_types;
  if (grantTypes !== undefined && !(Array.isArray(grantTypes) && grantTypes.includes('authorization_code')))
    throw new ClientMetadataError('the document\'s grant_types does not include "authorization_code"');
  const responseTypes = document.response_types;
  if (responseTypes !== undefined && !(Array.isArray(responseTypes) && responseTypes.includes('code')))
    throw new ClientMetadataError('the document\'s response_types does not include "code"');
  const name = document.client_name;
  if (name !== undefined && typeof name !== 'string') throw new ClientMetadataError("the document's client_name is not a string");
  const control = name === undefined ? undefined : controlCharacterIn(name);
  if (control) throw new ClientMetadataError(`the document's client_name has a control character (${control}), which a name shown to a person must not have`);
  const clientName = (name?.trim() || url.hostname).slice(0, MAX_CLIENT_NAME_LENGTH);
  return { clientId, clientName, redirectUris: redirectUris.map(checkRedirectUri) };
}

/**
 * Resolves client_ids to their metadata: checks the URL, fetches the document through the SSRF
 * guard (private addresses never, loopback only when allowed), checks it, and keeps it as long as
 * its Cache-Control allows within [1 min, 24 h]. A refusal is kept 30 s for its URL and, when the
 * host could not be reached (time-out, connection refused, SSRF guard), for every URL of that host,
 * so a failing client_id cannot make the service fetch at each request; concurrent resolves of one
 * client_id share one fetch.
 */
export function clientMetadataResolver(options: ClientMetadataResolverOptions): ClientMetadataResolver {
  const limits = { timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES };
  const now = options.now ?? Date.now;
  const agent = createGuardedAgent({
    allowLoopbackTargets: options.allowLoopbackClients,
    allowPrivateTargets: false,
    allowedBy: { loopback: 'allowed only for local development, by TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS' },
    connectTimeoutMs: limits.timeoutMs,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const failureCacheMs = options.failureCacheMs ?? DEFAULT_FAILURE_CACHE_MS;
  const cache = new Map<string, { metadata: ClientMetadata; expiresAt: number }>();
  /** Refusals kept a short while, by client_id and by host (`host:port`). */
  const failedUrls = new Map<string, { error: ClientMetadataError; expiresAt: number }>();
  const failedHosts = new Map<string, { error: ClientMetadataError; expiresAt: number }>();
  const fetching = new Map<string, Promise<ClientMetadata>>();

  function keep<T>(map: Map<string, T>, key: string, value: T): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_CACHE_ENTRIES) map.delete(map.keys().next().value!);
  }
  const live = <T extends { expiresAt: number }>(entry: T | undefined) => (entry && entry.expiresAt > now() ? entry : undefined);

  /** A refusal kept for this client_id or its host, if any. */
  function keptFailure(clientId: string, url: URL): ClientMetadataError | undefined {
    const host = live(failedHosts.get(url.host));
    if (host) return new ClientMetadataError(`${host.error.message} (${url.host} failed less than ${failureCacheMs / 1000} s ago; not fetched again yet)`);
    return live(failedUrls.get(clientId))?.error;
  }

  async function fetchAndCheck(clientId: string, url: URL): Promise<ClientMetadata> {
    try {
      const { document, maxAgeSeconds } = await fetchDocument(agent, clientId, limits);
      const metadata = checkDocument(clientId, url, document);
      failedUrls.delete(clientId);
      keep(cache, clientId, { metadata, expiresAt: now() + maxAgeSeconds * 1000 });
      return metadata;
    } catch (error) {
      if (error instanceof ClientMetadataError) {
        const kept = { error, expiresAt: now() + failureCacheMs };
        keep(failedUrls, clientId, kept);
        if (error.hostFailed) keep(failedHosts, url.host, kept);
      }
      throw error;
    }
  }

  return {
    async resolve(clientId) {
      const url = parseClientId(clientId, options.allowLoopbackClients);
      const cached = live(cache.get(clientId));
      if (cached) return cached.metadata;
      const failure = keptFailure(clientId, url);
      if (failure) throw failure;
      const pending = fetching.get(clientId);
      if (pending) return pending;
      const fetched = fetchAndCheck(clientId, url).finally(() => fetching.delete(clientId));
      fetching.set(clientId, fetched);
      return fetched;
    },
    wouldFetch(clientId) {
      let url: URL;
      try {
        url = parseClientId(clientId, options.allowLoopbackClients);
      } catch {
        return false;
      }
      return !live(cache.get(clientId)) && !keptFailure(clientId, url) && !fetching.has(clientId);
    },
    close: () => agent.close(),
  };
}

/** The resolver the authorization endpoint uses, as the configuration allows. */
export function createClientMetadataResolver(config: Pick<Config, 'oauthDevAllowLoopbackClients'>): ClientMetadataResolver {
  return clientMetadataResolver({ allowLoopbackClients: config.oauthDevAllowLoopbackClients });
}
