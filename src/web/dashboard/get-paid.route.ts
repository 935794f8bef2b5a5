import type { FastifyInstance, FastifyReply } from 'fastify';
import { can } from '../../accounts/roles.ts';
import { API_KEY_SCOPES, type ApiKeyScope, parseApiKeyScopes } from '../../common/api-key-scopes.ts';
import { keyModeOf } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { formFields, formValues } from '../../http/forms.ts';
import { createApiKey, type IssuedApiKey, listApiKeys, revokeApiKey } from '../../merchants/api-keys.ts';
import { withActivity } from '../../merchants/events.ts';
import { PAYMENT_API_BASE_PATH } from '../../merchants/merchants.ts';
import { createClient, type IssuedClient, listClients, revokeClient } from '../../oauth/clients.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { HTML_RESPONSE, sendPage } from '../kit/page.ts';
import { STEP_UP_FIELD, STEP_UP_LABEL, stepUpInput, stepUpRefusal } from '../kit/reauth.ts';
import { type DashboardUser, dashboardPage, onlyFor } from './layout.ts';
import { copyField, csrfInput, dashboardScript, moment } from './page-parts.ts';
import { addDashboardRoute } from './page-route.ts';

const PATH = '/dashboard/get-paid';

/** Notices after a redirect, by their code in `?done=`. */
const NOTICES: Record<string, string> = {
  'key-revoked': 'API key revoked. Requests with it are refused from now on.',
  'client-revoked': 'Client revoked. It can no longer get tokens, and its tokens are refused from now on.',
};

type Shown = { apiKey?: IssuedApiKey; client?: IssuedClient };

/** A key's access, as the list shows it: "Full access" or its scopes. */
const accessOf = (scopes: readonly ApiKeyScope[] | null | undefined) =>
  scopes
    ? joinHtml(
        scopes.map((scope) => html`<code>${scope}</code>`),
        html`, `,
      )
    : html`Full access`;

/** The creation form: a full key by default, or a restricted one with the scopes ticked. */
function newKeyForm(csrf: Html, problem: string | undefined, stepUp: Html): Html {
  const boxes = joinHtml(
    API_KEY_SCOPES.map(
      ({ scope, line }) =>
        html`<li><input type="checkbox" id="scope-${scope.replace(':', '-')}" name="scopes" value="${scope}"> <label for="scope-${scope.replace(':', '-')}"><code>${scope}</code>: ${line}</label></li>`,
    ),
    html`\n`,
  );
  return html`<form method="post" action="${PATH}/api-keys" class="key-form">${csrf}
<fieldset${problem ? html` aria-describedby="access-problem"` : ''}><legend>Access</legend>
${problem ? html`<p id="access-problem" class="problem" role="alert">${problem}</p>` : ''}
<p class="choice"><input type="radio" id="access-full" name="access" value="full" checked> <label for="access-full">Full access: every request of the payment API</label></p>
<p class="choice"><input type="radio" id="access-restricted" name="access" value="restricted"> <label for="access-restricted">Restricted to the scopes ticked below</label></p>
<ul class="choices scope-choices">${boxes}</ul></fieldset>
${stepUp}
<p><button type="submit">Create an API key</button></p></form>`;
}

/** E1 as curl, with the service's API base path and (when just created) the key itself. */
function curlSnippet(baseUrl: string, apiKey: string): string {
  const body = JSON.stringify({ amount: 25.5, currency: 'USD', concept: 'Order 1001', orderType: 'TRANSIENT' });
  return `curl -X POST '${baseUrl}${PAYMENT_API_BASE_PATH}/payment_session' \\
  -H 'Content-Type: application/json' \\
  -H 'X-SC-ApiKey: ${apiKey}' \\
  -d '${body}'`;
}

/** A refusal to show by a form: which form (`key`, `client`), which field (`access` or the step-up's), and why. */
type FormProblem = { form: 'key' | 'client'; field: 'access' | typeof STEP_UP_FIELD; message: string };

async function getPaidBody(context: AppContext, signedIn: DashboardUser, shown: Shown, formProblem?: FormProblem): Promise<Html> {
  const problemOf = (form: FormProblem['form'], field: FormProblem['field']) =>
    formProblem?.form === form && formProblem.field === field ? formProblem.message : undefined;
  const stepUp = (form: FormProblem['form']) => stepUpInput(signedIn, context.now(), form, problemOf(form, STEP_UP_FIELD), PATH);
  const merchantId = signedIn.user.merchantId;
  const { mode } = signedIn.modes;
  const keyMode = keyModeOf(mode);
  const [{ keys }, clients] = await Promise.all([listApiKeys(context.db, merchantId, keyMode), listClients(context.db, merchantId, mode)]);
  const csrf = csrfInput(signedIn.csrfToken);
  const mayManage = can(signedIn.user.role, 'keys');

  const newKey = shown.apiKey
    ? html`<div class="secret" role="region" aria-labelledby="new-key-heading"><h3 id="new-key-heading">Your new API key</h3>
<p>Copy it now and keep it on your server: it is shown this once, and only its last four characters afterwards.</p>
<p>Access: ${accessOf(shown.apiKey.scopes)}.</p>
${copyField('new-api-key', 'API key', shown.apiKey.apiKey, { select: true })}</div>`
    : '';
  const keyRows = joinHtml(
    keys.map(
      (key) => html`<tr><td data-label="Key"><code>${key.masked}</code></td><td data-label="Mode">${key.mode}</td>
<td data-label="Access">${accessOf(key.scopes)}</td><td data-label="Created">${moment(key.createdAt)}</td><td data-label="Last used">${moment(key.lastUsedAt)}</td>
<td>${mayManage ? html`<form method="post" action="${PATH}/api-keys/${encodeURIComponent(key.keyId)}/revoke">${csrf}<button type="submit" class="danger" aria-label="Revoke the key ending ${key.masked.slice(1)}">Revoke</button></form>` : ''}</td></tr>`,
    ),
    html`\n`,
  );
  const keyTable = keys.length
    ? html`<h3 class="keys-heading">Active keys</h3><p class="note">Masked: the keys themselves are not stored.</p><table class="cards"><thead><tr><th scope="col">Key</th><th scope="col">Mode</th><th scope="col">Access</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${keyRows}</tbody></table>`
    : html`<p>No active API key.</p>`;

  const newClient = shown.client
    ? html`<div class="secret" role="region" aria-labelledby="new-client-heading"><h3 id="new-client-heading">Your new client</h3>
<p>Copy the secret now: it is shown this once.</p>
${copyField('new-client-id', 'Client ID', shown.client.clientId)}
${copyField('new-client-secret', 'Client secret', shown.client.clientSecret, { select: true })}</div>`
    : '';
  const clientRows = joinHtml(
    clients.map(
      (client) => html`<tr><td data-label="Client ID"><code>${client.clientId}</code></td><td data-label="Created">${moment(client.createdAt)}</td>
<td>${mayManage ? html`<form method="post" action="${PATH}/clients/${encodeURIComponent(client.clientId)}/revoke">${csrf}<button type="submit" class="danger" aria-label="Revoke client ${client.clientId}">Revoke</button></form>` : ''}</td></tr>`,
    ),
    html`\n`,
  );
  const clientTable = clients.length
    ? html`<h3 class="keys-heading">Active clients</h3><table class="cards"><thead><tr><th scope="col">Client ID</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${clientRows}</tbody></table>`
    : html`<p>No active client.</p>`;

  const snippetKey = shown.apiKey?.apiKey ?? `sk_${keyMode}_…`;
  return html`<p>Your server creates a payment session with an API key (or a client-credentials token), then sends the buyer to its <code>redirectUrl</code>.</p>
<section aria-labelledby="keys-heading"><h2 id="keys-heading">API keys</h2>
${newKey}
${onlyFor(signedIn, 'keys', newKeyForm(csrf, problemOf('key', 'access'), stepUp('key')))}
${keyTable}</section>
<section aria-labelledby="clients-heading"><h2 id="clients-heading">Client credentials</h2>
<p>For a server that gets short-lived bearer tokens from <code>POST /oauth/token</code> instead of holding an API key.</p>
${newClient}
${onlyFor(signedIn, 'keys', html`<form method="post" action="${PATH}/clients" class="key-form">${csrf}${stepUp('client')}<p><button type="submit">Create a client</button></p></form>`)}
${clientTable}</section>
<section aria-labelledby="curl-heading"><h2 id="curl-heading">Create a payment session</h2>
<p>The payment API is at <code>${context.config.baseUrl + PAYMENT_API_BASE_PATH}</code>.${shown.apiKey ? ' This one carries your new key.' : html` Put your key in place of <code>${snippetKey}</code>.`}</p>
<pre id="curl-snippet" tabindex="0" aria-label="curl command">${curlSnippet(context.config.baseUrl, snippetKey)}</pre>
</section>${dashboardScript()}`;
}

async function sendGetPaid(
  context: AppContext,
  reply: FastifyReply,
  signedIn: DashboardUser,
  status: number,
  view: { shown?: Shown; notice?: string; problem?: string; formProblem?: FormProblem },
) {
  return sendPage(
    reply,
    status,
    dashboardPage({
      signedIn,
      section: 'get-paid',
      ...(view.notice ? { notice: view.notice } : {}),
      ...(view.problem ? { problem: view.problem } : {}),
      body: await getPaidBody(context, signedIn, view.shown ?? {}, view.formProblem),
    }),
  );
}

const NOT_FOUND = { 404: HTML_RESPONSE };

/** The form's access: a full key (no scopes) unless `restricted`, which needs one scope or more, each known. */
function requestedScopes(access: string | undefined, ticked: string[]): { scopes?: ApiKeyScope[] } | { problem: string } {
  if (access !== 'restricted') return access === undefined || access === 'full' ? {} : { problem: 'must be full or restricted' };
  const parsed = parseApiKeyScopes(ticked);
  if ('unknown' in parsed) return { problem: `"${parsed.unknown}" is not a scope` };
  if (parsed.scopes.length === 0) return { problem: 'tick at least one scope for a restricted key' };
  return { scopes: parsed.scopes };
}

/** Get paid: API keys and client credentials (create shown once, list, revoke) and a ready E1 curl command. */
export function registerGetPaid(app: FastifyInstance, context: AppContext): void {
  const route = (doc: Parameters<typeof addDashboardRoute>[2], handler: Parameters<typeof addDashboardRoute>[3]) =>
    addDashboardRoute(app, context, doc, handler);
  const refuseStepUp = (reply: FastifyReply, signedIn: DashboardUser, form: FormProblem['form'], message: string) =>
    sendGetPaid(context, reply, signedIn, 400, { problem: `${STEP_UP_LABEL} ${message}.`, formProblem: { form, field: STEP_UP_FIELD, message } });

  route(
    { method: 'GET', url: PATH, permission: 'view', summary: "The signed-in merchant's API keys, clients and an E1 curl command" },
    async (signedIn, request, reply) => {
      const done = (request.query as { done?: unknown }).done;
      const notice = typeof done === 'string' ? NOTICES[done] : undefined;
      return sendGetPaid(context, reply, signedIn, 200, notice ? { notice } : {});
    },
  );

  route(
    {
      method: 'POST',
      url: `${PATH}/api-keys`,
      permission: 'keys',
      summary:
        'Creates an API key (full, or restricted to the ticked `scopes` with `access=restricted`), shown on the answered page this once (a fresh second factor first, for a user with one)',
      responses: { 200: HTML_RESPONSE, 400: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const scopes = requestedScopes(fields.access, formValues(request, 'scopes'));
      if ('problem' in scopes)
        return sendGetPaid(context, reply, signedIn, 400, {
          problem: `Access: ${scopes.problem}`,
          formProblem: { form: 'key', field: 'access', message: scopes.problem },
        });
      const stepUp = await stepUpRefusal(context, signedIn, fields[STEP_UP_FIELD]);
      if (stepUp) return refuseStepUp(reply, signedIn, 'key', stepUp);
      const { mode } = signedIn.modes;
      const apiKey = await withActivity(
        context.db,
        signedIn.user.merchantId,
        actorOf(signedIn.user, request),
        (trx) => createApiKey(trx, signedIn.user.merchantId, keyModeOf(mode), context.now(), scopes.scopes),
        (key) => ({ type: 'api_key_created', mode, detail: { key: key.keyId, ends: key.lastFour, ...(key.scopes ? { scopes: key.scopes.join(' ') } : {}) } }),
        context.now(),
      );
      return sendGetPaid(context, reply, signedIn, 200, { shown: { apiKey }, notice: `API key …${apiKey.lastFour} created.` });
    },
  );

  route(
    {
      method: 'POST',
      url: `${PATH}/clients`,
      permission: 'keys',
      summary: 'Creates a client-credentials client, its secret shown on the answered page this once (a fresh second factor first, for a user with one)',
      responses: { 200: HTML_RESPONSE, 400: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const stepUp = await stepUpRefusal(context, signedIn, formFields(request)[STEP_UP_FIELD]);
      if (stepUp) return refuseStepUp(reply, signedIn, 'client', stepUp);
      const { mode } = signedIn.modes;
      const client = await withActivity(
        context.db,
        signedIn.user.merchantId,
        actorOf(signedIn.user, request),
        (trx) => createClient(trx, signedIn.user.merchantId, mode, context.now()),
        (made) => ({ type: 'client_created', mode, detail: { client: made.clientId } }),
        context.now(),
      );
      return sendGetPaid(context, reply, signedIn, 200, { shown: { client }, notice: `Client ${client.clientId} created.` });
    },
  );

  const revocations = [
    { url: `${PATH}/api-keys/{id}/revoke`, what: 'API key', revoke: revokeApiKey, done: 'key-revoked', type: 'api_key_revoked' },
    { url: `${PATH}/clients/{id}/revoke`, what: 'client', revoke: revokeClient, done: 'client-revoked', type: 'client_revoked' },
  ] as const;
  for (const { url, what, revoke, done, type } of revocations)
    route(
      { method: 'POST', url, permission: 'keys', summary: `Revokes one of the merchant’s ${what}s`, responses: NOT_FOUND },
      async (signedIn, request, reply) => {
        const { id } = request.params as { id: string };
        const revoked = await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => revoke(trx, id, context.now(), signedIn.user.merchantId),
          (yes) => (yes ? { type, mode: signedIn.modes.mode, detail: { id } } : undefined),
          context.now(),
        );
        if (!revoked) return sendGetPaid(context, reply, signedIn, 404, { problem: `No such ${what}: it was revoked already, or it is not one of yours.` });
        return reply.redirect(`${PATH}?done=${done}`, 303);
      },
    );
}
