import { TillError } from '../common/errors.ts';
import { type Mode, modeLabel } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { consume, type Limit } from '../limits/limits.ts';
import { type AuthorizationRequest, answerAuthorizationRequest, saveAuthorizationRequest } from './authorization-requests.ts';
import { type ClientMetadata, ClientMetadataError, type ClientMetadataResolver, controlCharacterIn } from './client-metadata.ts';
import { grantRefusal } from './credential-modes.ts';
import { issueGrantSecret } from './grant-secrets.ts';
import { activeGrantFor, addConsent, orderedScopes } from './grants.ts';
import { DEFAULT_SCOPES, SCOPES, type Scope } from './scopes.ts';
import { mcpAudience } from './tokens.ts';

// Coding agents' authorization (RFC 6749 code flow with PKCE, Client ID Metadata Documents): the
// checks of an authorization request, and the merchant's answer on the consent screen as two
// functions (allow, deny) that the page in web/consent/ calls.

const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const KNOWN_SCOPES = new Set<string>(SCOPES.map((s) => s.scope));

export type Checked =
  | { refuse: string }
  | { redirectError: { error: string; error_description: string }; target: { redirectUri: string; state?: string } }
  | { request: Omit<AuthorizationRequest, 'id' | 'userId'> };

/**
 * The authorization request's checks, in order. Until the client and its redirect URI are known
 * good, a refusal is shown to the person; after that, it goes back to the client.
 */
export async function checkAuthorizationRequest(
  context: AppContext,
  clients: ClientMetadataResolver,
  query: URLSearchParams,
  limitFetches: () => Promise<void>,
): Promise<Checked> {
  const repeated = [...new Set([...query.keys()].filter((name, index, all) => all.indexOf(name) !== index))];
  if (repeated.length) return { refuse: `The parameter ${repeated[0]} is given more than once.` };
  const clientId = query.get('client_id');
  if (!clientId) return { refuse: 'The client_id parameter is missing: it must be the URL of the client’s metadata document.' };
  // Anyone can ask for any client_id: a fetch (not an answer from the cache) counts against the client IP's limit.
  if (clients.wouldFetch(clientId)) await limitFetches();
  let client: ClientMetadata;
  try {
    client = await clients.resolve(clientId);
  } catch (error) {
    if (error instanceof ClientMetadataError) return { refuse: `The client could not be identified: ${error.message}.` };
    throw error;
  }
  const redirectUri = query.get('redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : undefined);
  if (!redirectUri) return { refuse: 'The redirect_uri parameter is missing, and the client’s document lists more than one.' };
  if (!client.redirectUris.includes(redirectUri))
    return { refuse: `The redirect_uri ${redirectUri} is not one of those listed in the client’s metadata document.` };

  const state = query.get('state') ?? undefined;
  const back = (error: string, description: string): Checked => ({ redirectError: { error, error_description: description }, target: { redirectUri, state } });
  const stateControl = state === undefined ? undefined : controlCharacterIn(state);
  if (stateControl)
    return {
      redirectError: { error: 'invalid_request', error_description: `state has a control character (${stateControl})` },
      target: { redirectUri },
    };
  if (query.get('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be code');
  if (query.get('code_challenge_method') !== 'S256') return back('invalid_request', 'code_challenge_method must be S256 (PKCE is required; plain is refused)');
  const codeChallenge = query.get('code_challenge') ?? '';
  if (!CODE_CHALLENGE.test(codeChallenge)) return back('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier (43 characters)');
  const requested = (query.get('scope') ?? '').split(' ').filter(Boolean);
  const unknown = requested.find((scope) => !KNOWN_SCOPES.has(scope));
  if (unknown) return back('invalid_scope', `${unknown} is not a scope of this server; they are ${[...KNOWN_SCOPES].join(', ')}`);
  const resource = query.get('resource') ?? mcpAudience(context.config);
  if (resource !== mcpAudience(context.config)) return back('invalid_target', `the only resource is ${mcpAudience(context.config)}`);
  return {
    request: {
      clientId: client.clientId,
      clientName: client.clientName,
      redirectUri,
      state,
      codeChallenge,
      scopes: requested.length ? orderedScopes(requested) : DEFAULT_SCOPES,
      resource,
    },
  };
}

/** RFC 6749 §4.1.2: where the answer goes back to the client: its redirect URI, with its state and our issuer (RFC 9207). */
export function clientRedirectUrl(context: AppContext, target: { redirectUri: string; state?: string }, params: Record<string, string>): string {
  const url = new URL(target.redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (target.state !== undefined) url.searchParams.set('state', target.state);
  url.searchParams.set('iss', context.config.authUrl);
  return url.href;
}

/**
 * Which boxes start ticked: the scopes the client asked for, except elevated ones, which the
 * merchant must tick themselves (spec 5.3), and those already granted to this client.
 */
export function preTicked(scope: (typeof SCOPES)[number], requested: Scope[], granted: Scope[]): boolean {
  return granted.includes(scope.scope) || (requested.includes(scope.scope) && !scope.elevated);
}

/** The scopes this merchant already granted this client in this mode (shown ticked and fixed on the consent screen). */
export async function alreadyGranted(context: AppContext, merchantId: string, clientId: string, mode: Mode): Promise<Scope[]> {
  return (await activeGrantFor(context.db, merchantId, clientId, mode))?.scopes ?? [];
}

/** Saves a checked authorization request for the consent screen. */
export const openAuthorizationRequest = (context: AppContext, request: Omit<AuthorizationRequest, 'id' | 'userId'>) =>
  saveAuthorizationRequest(context.db, request, context.now());

export type Answered = { redirect: string } | { expired: true } | { nothingChosen: true } | { refused: string };

/** The merchant denied: the request is answered, and the client is told `access_denied`. */
export async function denyAuthorization(context: AppContext, pending: AuthorizationRequest, userId: string): Promise<Answered> {
  const answered = await context.db.transaction().execute((trx) => answerAuthorizationRequest(trx, pending.id, userId, context.now()));
  if (!answered) return { expired: true };
  return { redirect: clientRedirectUrl(context, pending, { error: 'access_denied', error_description: 'the merchant denied access' }) };
}

/**
 * The merchant allowed `chosen` on the data of `mode` (the one the consent screen showed): the
 * scopes join the grant this merchant gave this client in that mode (or make one), and the client
 * gets a one-minute code. Nothing chosen and nothing granted before is no answer; a mode the
 * deployment does not serve, or live data for a development client on this machine, is refused.
 */
export async function allowAuthorization(
  context: AppContext,
  pending: AuthorizationRequest,
  user: { id: string; merchantId: string },
  chosenScopes: string[],
  mode: Mode,
  /** Written with the grant, in its transaction (the activity log's line). */
  alsoInTransaction?: (trx: Db, scopes: readonly Scope[]) => Promise<void>,
): Promise<Answered> {
  const refused = grantRefusal(context.config, { mode, clientId: pending.clientId });
  if (refused)
    return {
      refused:
        refused.reason === 'mode_not_served'
          ? `This deployment does not serve ${modeLabel(mode)} mode.`
          : `${pending.clientName} runs on a computer of its developer (its address is http on this machine), so it can be given test data only. Switch your dashboard to test mode and start again from the agent.`,
    };
  const chosen = orderedScopes(chosenScopes);
  if (!chosen.length && !(await alreadyGranted(context, user.merchantId, pending.clientId, mode)).length) return { nothingChosen: true };
  const now = context.now();
  const code = await context.db.transaction().execute(async (trx) => {
    if (!(await answerAuthorizationRequest(trx, pending.id, user.id, now))) return undefined;
    const grant = await addConsent(
      trx,
      { merchantId: user.merchantId, userId: user.id, clientId: pending.clientId, clientName: pending.clientName, scopes: chosen, mode },
      now,
    );
    await alsoInTransaction?.(trx, chosen);
    return issueGrantSecret(
      trx,
      'code',
      { grantId: grant.id, clientId: pending.clientId, redirectUri: pending.redirectUri, codeChallenge: pending.codeChallenge },
      now,
    );
  });
  if (!code) return { expired: true };
  return { redirect: clientRedirectUrl(context, pending, { code }) };
}

/** Whether an error is the fetch limit of client documents (the page says so, with Retry-After). */
export const fetchLimited = (error: unknown): error is TillError => error instanceof TillError && error.code === 'rate_limited';

/** Anyone can ask for any client_id: a fetch of a client's document counts against the asking address's limit. */
export function limitClientFetches(context: AppContext, ip: string): Promise<void> {
  const fetchesPerIp: Limit = {
    name: 'oauth_client_fetches_ip',
    points: context.config.oauthClientFetchesPerMinutePerIp,
    windowMs: 60_000,
    what: 'client metadata documents fetched for this address',
  };
  return consume(context.db, [{ limit: fetchesPerIp, subject: ip }], context.now());
}
