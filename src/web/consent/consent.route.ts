import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { can, PERMISSIONS, ROLE_LABELS, type Role } from '../../accounts/roles.ts';
import { currentUser, redirectToSignIn, type SignedIn } from '../../accounts/web-session.ts';
import { keyModeOf, type Mode, modeOfKey } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { formFields, formValues } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { recordActivity } from '../../merchants/events.ts';
import { type AuthorizationRequest, claimAuthorizationRequest, pendingAuthorizationRequest } from '../../oauth/authorization-requests.ts';
import type { ClientMetadataResolver } from '../../oauth/client-metadata.ts';
import {
  type Answered,
  allowAuthorization,
  alreadyGranted,
  type Checked,
  checkAuthorizationRequest,
  clientRedirectUrl,
  denyAuthorization,
  fetchLimited,
  limitClientFetches,
  openAuthorizationRequest,
} from '../../oauth/consent.ts';
import { actorOf } from '../kit/actor.ts';
import { addFormRoute } from '../kit/forms.ts';
import type { Html } from '../kit/html.ts';
import { viewedMode } from '../kit/mode.ts';
import { HTML_RESPONSE, pageCsp, sendPage } from '../kit/page.ts';
import { STEP_UP_FIELD, STEP_UP_LABEL, stepUpInput, stepUpRefusal } from '../kit/reauth.ts';
import { authorizationErrorPage, consentPage } from './page.ts';

const TAG = 'OAuth';

const EXPIRED = 'This authorization request has expired or was already answered.';
/** A role without the `agents` permission cannot authorize a coding agent (accounts/roles.ts). */
const roleRefused = (role: Role) =>
  `Your role, ${ROLE_LABELS[role]}, cannot ${PERMISSIONS.agents}. Ask an owner, an admin or a developer of your team to authorize it.`;
const NOT_YOURS = 'This authorization request was opened by another user. Sign in as that user, or start again from your coding agent.';
const FORM_REFUSED = 'This form has expired or was not sent from the consent screen. Start again from your coding agent.';

const refusal = (reply: FastifyReply, status: number, problem: string) => sendPage(reply, status, authorizationErrorPage(problem));
const toClient = (reply: FastifyReply, url: string) => reply.header('cache-control', 'no-store').redirect(url, 303);

/** The pending request of a consent URL, if it can still be answered. */
function openRequest(context: AppContext, request: FastifyRequest): Promise<AuthorizationRequest | undefined> {
  const { id } = request.params as { id: string };
  return pendingAuthorizationRequest(context.db, id, context.now());
}

/** The authorization endpoint and consent screen of coding agents; client documents come through `clients`. */
export const registerConsentPages =
  (clients: ClientMetadataResolver) =>
  (app: FastifyInstance, context: AppContext): void => {
    addRoute(
      app,
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
          checked = await checkAuthorizationRequest(context, clients, query, () => limitClientFetches(context, request.ip));
        } catch (error) {
          if (!fetchLimited(error)) throw error;
          const retryAfter = error.retryAfterSeconds ?? 60;
          reply.header('retry-after', String(retryAfter));
          return refusal(reply, 429, `Too many coding agents’ documents were fetched for your address this minute. Try again in ${retryAfter} s.`);
        }
        if ('refuse' in checked) return refusal(reply, 400, checked.refuse);
        if ('redirectError' in checked) return toClient(reply, clientRedirectUrl(context, checked.target, checked.redirectError));
        const saved = await openAuthorizationRequest(context, checked.request);
        return reply.header('cache-control', 'no-store').redirect(`/oauth/consent/${saved.id}`, 303);
      },
    );

    addRoute(
      app,
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
        if (!pending) return refusal(reply, 400, EXPIRED);
        const signedIn = await currentUser(context, request);
        if (!signedIn) return redirectToSignIn(reply, `/oauth/consent/${pending.id}`);
        if (!(await claimAuthorizationRequest(context.db, pending, signedIn.user.id))) return refusal(reply, 403, NOT_YOURS);
        if (!can(signedIn.user.role, 'agents')) return refusal(reply, 403, roleRefused(signedIn.user.role));
        return sendConsent(reply, 200, context, pending, signedIn, viewedMode(context, request));
      },
    );

    addFormRoute(
      app,
      context,
      {
        method: 'POST',
        url: '/oauth/consent/{id}',
        summary: 'The merchant’s answer on the consent screen (form post)',
        description:
          'Takes `csrf` (the signed-in session’s token), `mode` (`test` or `live`: the data the screen showed the agent would get; the dashboard’s current mode when absent), `decision` (`allow` or `deny`) and one `scope` field per ticked scope. Allowing adds the scopes to the grant this merchant gave this client in that mode (or makes one) and sends a one-minute code to the client; denying sends `access_denied`.',
        tag: TAG,
        security: 'none',
        responses: { 303: { description: 'Back to the client with a code or an error' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE },
      },
      {
        kind: 'signed-in',
        signedOut: (_request, reply) => refusal(reply, 403, FORM_REFUSED),
        refuse: (_request, reply) => refusal(reply, 403, FORM_REFUSED),
      },
      async (signedIn, request, reply) => {
        const pending = await openRequest(context, request);
        if (!pending) return refusal(reply, 400, EXPIRED);
        if (pending.userId !== signedIn.user.id) return refusal(reply, 403, NOT_YOURS);
        if (!can(signedIn.user.role, 'agents')) return refusal(reply, 403, roleRefused(signedIn.user.role));
        const fields = formFields(request);
        // The mode the screen showed, not whatever the dashboard shows now: the merchant agreed to that one.
        if (fields.mode !== undefined && fields.mode !== 'test' && fields.mode !== 'live') return refusal(reply, 403, FORM_REFUSED);
        const mode = fields.mode === undefined ? viewedMode(context, request) : modeOfKey(fields.mode);
        // Allowing an agent needs a fresh second factor of a user with one; denying never does.
        const stepUp = fields.decision === 'allow' ? await stepUpRefusal(context, signedIn, fields[STEP_UP_FIELD]) : undefined;
        if (stepUp) return sendConsent(reply, 400, context, pending, signedIn, mode, `${STEP_UP_LABEL} ${stepUp}.`, stepUp);
        const answered: Answered =
          fields.decision === 'allow'
            ? await allowAuthorization(context, pending, signedIn.user, formValues(request, 'scope'), mode, (trx, scopes) =>
                recordActivity(
                  trx,
                  signedIn.user.merchantId,
                  actorOf(signedIn.user, request),
                  { type: 'agent_authorized', mode, detail: { agent: pending.clientName, client: pending.clientId, scopes: scopes.join(' ') } },
                  context.now(),
                ),
              )
            : await denyAuthorization(context, pending, signedIn.user.id);
        if ('nothingChosen' in answered) return sendConsent(reply, 400, context, pending, signedIn, mode, 'Tick at least one thing it may do, or choose Deny.');
        if ('refused' in answered) return sendConsent(reply, 400, context, pending, signedIn, mode, answered.refused);
        if ('expired' in answered) return refusal(reply, 400, EXPIRED);
        return toClient(reply, answered.redirect);
      },
    );
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
  mode: Mode,
  problem?: string,
  stepUpProblem?: string,
): Promise<FastifyReply> {
  const granted = await alreadyGranted(context, signedIn.user.merchantId, pending.clientId, mode);
  reply.header('content-security-policy', pageCsp([new URL(pending.redirectUri).origin]));
  const body: Html = consentPage({
    request: pending,
    email: signedIn.user.email,
    csrfToken: signedIn.csrfToken,
    alreadyGranted: granted,
    mode: keyModeOf(mode),
    bothModesServed: context.config.modes.length > 1,
    problem,
    stepUp: stepUpInput(signedIn, context.now(), 'consent', stepUpProblem, `/oauth/consent/${pending.id}`),
  });
  return sendPage(reply, status, body);
}
