import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentUser, redirectToSignIn, type SignedIn, sessionCsrfValid } from '../accounts/web-session.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { formFields, formValues, registerFormParser } from '../http/forms.ts';
import { pageCsp, sendPage } from '../http/html.ts';
import { addRoute } from '../http/routes.ts';
import { consume, type Limit } from '../limits/limits.ts';
import {
  type AuthorizationRequest,
  answerAuthorizationRequest,
  claimAuthorizationRequest,
  pendingAuthorizationRequest,
  saveAuthorizationRequest,
} from './authorization-requests.ts';
import { type ClientMetadata, ClientMetadataError, type ClientMetadataResolver, controlCharacterIn } from './client-metadata.ts';
import { authorizationErrorPage, consentPage } from './consent-page.ts';
import { issueGrantSecret } from './grant-secrets.ts';
import { activeGrantFor, addConsent, orderedScopes } from './grants.ts';
import { DEFAULT_SCOPES, SCOPES, type Scope } from './scopes.ts';
import { mcpAudience } from './tokens.ts';

const TAG = 'OAuth';
const HTML_RESPONSE = { description: 'An HTML page' };
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const KNOWN_SCOPES = new Set<string>(SCOPES.map((s) => s.scope));

/** RFC 6749 §4.1.2: the answer goes back to the client's redirect URI, with its state and our issuer (RFC 9207). */
function redirectToClient(reply: FastifyReply, context: AppContext, target: { redirectUri: string; state?: string }, params: Record<string, string>) {
  const url = new URL(target.redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (target.state !== undefined) url.searchParams.set('state', target.state);
  url.searchParams.set('iss', context.config.authUrl);
  return reply.header('cache-control', 'no-store').redirect(url.href, 303);
}

type Checked =
  | { refuse: string }
  | { redirectError: { error: string; error_description: string }; target: { redirectUri: string; state?: string } }
  | { request: Omit<AuthorizationRequest, 'id' | 'userId'> };

/**
 * The authorization request's checks, in order. Until the client and its redirect URI are known
 * good, a refusal is shown to the person; after that, it goes back to the client.
 */
async function checkAuthorizationRequest(
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

/** The pending request of a consent URL, or the page that says why it cannot be answered. */
async function openRequest(context: AppContext, request: FastifyRequest): Promise<AuthorizationRequest | undefined> {
  const { id } = request.params as { id: string };
  return pendingAuthorizationRequest(context.db, id, context.now());
}

const EXPIRED = 'This authorization request has expired or was already answered.';
const NOT_YOURS = 'This authorization request was opened by another user. Sign in as that user, or start again from your coding agent.';

/** The authorization endpoint and consent screen; client documents come through `clients`. */
export const registerAuthorizeRoutes =
  (clients: ClientMetadataResolver) =>
  (app: FastifyInstance, context: AppContext): void => {
    const fetchesPerIp: Limit = {
      name: 'oauth_client_fetches_ip',
      points: context.config.oauthClientFetchesPerMinutePerIp,
      windowMs: 60_000,
      what: 'client metadata documents fetched for this address',
    };
    app.register(async (pages) => {
      registerFormParser(pages);

      addRoute(
        pages,
        {
          method: 'GET',
          url: '/oauth/authorize',
          summary: 'OAuth 2.1 authorization endpoint for coding agents (code + PKCE S256)',
          description:
            'The client is identified by its Client ID Metadata Document: `client_id` is its https URL, fetched (with an SSRF guard, size and time limits, cached) and checked; `redirect_uri` must be listed in it exactly. Takes `response_type=code`, `code_challenge` with `code_challenge_method=S256`, `scope` (space-separated), `state` and `resource` (`{mcp_url}/mcp`, the default). On to sign-in if needed, then the consent screen.',
          tag: TAG,
          security: 'none',
          responses: {
            303: { description: 'On to the consent screen, or back to the client with an error' },
            400: { description: 'An HTML page naming what is wrong with the client or its redirect URI' },
            429: { description: 'An HTML page: this address had too many client metadata documents fetched this minute; Retry-After says when to try again' },
          },
        },
        {},
        async (request, reply) => {
          const query = new URL(request.url, context.config.authUrl).searchParams;
          let checked: Checked;
          try {
            checked = await checkAuthorizationRequest(context, clients, query, () =>
              consume(context.db, [{ limit: fetchesPerIp, subject: request.ip }], context.now()),
            );
          } catch (error) {
            if (!(error instanceof TillError) || error.code !== 'rate_limited') throw error;
            const retryAfter = error.retryAfterSeconds ?? 60;
            reply.header('retry-after', String(retryAfter));
            return sendPage(
              reply,
              429,
              authorizationErrorPage(`Too many coding agents’ documents were fetched for your address this minute. Try again in ${retryAfter} s.`),
            );
          }
          if ('refuse' in checked) return sendPage(reply, 400, authorizationErrorPage(checked.refuse));
          if ('redirectError' in checked) return redirectToClient(reply, context, checked.target, checked.redirectError);
          const saved = await saveAuthorizationRequest(context.db, checked.request, context.now());
          return reply.header('cache-control', 'no-store').redirect(`/oauth/consent/${saved.id}`, 303);
        },
      );

      addRoute(
        pages,
        {
          method: 'GET',
          url: '/oauth/consent/{id}',
          summary: 'The consent screen of an authorization request',
          tag: TAG,
          security: 'none',
          responses: { 200: HTML_RESPONSE, 303: { description: 'Not signed in: on to the sign-in page' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE },
        },
        {},
        async (request, reply) => {
          const pending = await openRequest(context, request);
          if (!pending) return sendPage(reply, 400, authorizationErrorPage(EXPIRED));
          const signedIn = await currentUser(context, request);
          if (!signedIn) return redirectToSignIn(reply, `/oauth/consent/${pending.id}`);
          if (!(await claimAuthorizationRequest(context.db, pending, signedIn.user.id))) return sendPage(reply, 403, authorizationErrorPage(NOT_YOURS));
          return sendConsent(reply, 200, context, pending, signedIn);
        },
      );

      addRoute(
        pages,
        {
          method: 'POST',
          url: '/oauth/consent/{id}',
          summary: 'The merchant’s answer on the consent screen (form post)',
          description:
            'Takes `csrf` (the signed-in session’s token), `decision` (`allow` or `deny`) and one `scope` field per ticked scope. Allowing adds the scopes to the grant this merchant gave this client (or makes one) and sends a one-minute code to the client; denying sends `access_denied`.',
          tag: TAG,
          security: 'none',
          responses: { 303: { description: 'Back to the client with a code or an error' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE },
        },
        {},
        async (request, reply) => {
          const signedIn = await currentUser(context, request);
          const fields = formFields(request);
          if (!signedIn || !sessionCsrfValid(signedIn, fields.csrf))
            return sendPage(
              reply,
              403,
              authorizationErrorPage('This form has expired or was not sent from the consent screen. Start again from your coding agent.'),
            );
          const pending = await openRequest(context, request);
          if (!pending) return sendPage(reply, 400, authorizationErrorPage(EXPIRED));
          if (pending.userId !== signedIn.user.id) return sendPage(reply, 403, authorizationErrorPage(NOT_YOURS));
          const now = context.now();

          if (fields.decision !== 'allow') {
            const answered = await context.db.transaction().execute((trx) => answerAuthorizationRequest(trx, pending.id, signedIn.user.id, now));
            if (!answered) return sendPage(reply, 400, authorizationErrorPage(EXPIRED));
            return redirectToClient(reply, context, pending, { error: 'access_denied', error_description: 'the merchant denied access' });
          }
          const alreadyGranted = (await activeGrantFor(context.db, signedIn.user.merchantId, pending.clientId))?.scopes ?? [];
          const chosen = orderedScopes(formValues(request, 'scope'));
          if (!chosen.length && !alreadyGranted.length)
            return sendConsent(reply, 400, context, pending, signedIn, 'Tick at least one thing it may do, or choose Deny.');

          const code = await context.db.transaction().execute(async (trx) => {
            if (!(await answerAuthorizationRequest(trx, pending.id, signedIn.user.id, now))) return undefined;
            const grant = await addConsent(
              trx,
              { merchantId: signedIn.user.merchantId, userId: signedIn.user.id, clientId: pending.clientId, clientName: pending.clientName, scopes: chosen },
              now,
            );
            return issueGrantSecret(
              trx,
              'code',
              { grantId: grant.id, clientId: pending.clientId, redirectUri: pending.redirectUri, codeChallenge: pending.codeChallenge },
              now,
            );
          });
          if (!code) return sendPage(reply, 400, authorizationErrorPage(EXPIRED));
          return redirectToClient(reply, context, pending, { code });
        },
      );
    });
  };

/**
 * The consent screen. Its form is answered with a redirect to the client, which the browser holds
 * to the page's form-action: the redirect URI's origin is named there beside our own.
 */
async function sendConsent(
  reply: FastifyReply,
  status: number,
  context: AppContext,
  pending: AuthorizationRequest,
  signedIn: SignedIn,
  problem?: string,
): Promise<FastifyReply> {
  const existing = await activeGrantFor(context.db, signedIn.user.merchantId, pending.clientId);
  reply.header('content-security-policy', pageCsp([new URL(pending.redirectUri).origin]));
  return sendPage(
    reply,
    status,
    consentPage({
      request: pending,
      email: signedIn.user.email,
      csrfToken: signedIn.csrfToken,
      alreadyGranted: existing?.scopes ?? ([] as Scope[]),
      problem,
    }),
  );
}
