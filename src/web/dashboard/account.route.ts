import type { FastifyInstance, FastifyReply } from 'fastify';
import { endAllUserSessions } from '../../accounts/user-sessions.ts';
import { passwordProblem, passwordSetAt, setPassword } from '../../accounts/users.ts';
import { forgetSession, signIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { type AgentMadeKey, keysMadeByAgentsSince, revokeApiKey } from '../../merchants/api-keys.ts';
import { withActivity } from '../../merchants/events.ts';
import { listGrants } from '../../oauth/grants.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { sendPage } from '../kit/page.ts';
import { passwordRefusal } from '../kit/reauth.ts';
import { revokeEveryGrant } from './agent-access.ts';
import { csrfInput, type FieldProblem, labelledInput, utcMinute } from './form-controls.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute, TWO_FACTOR_PATH } from './page-route.ts';

export const ACCOUNT_PATH = '/dashboard/account';

const LABELS: Record<string, string> = {
  current_password: 'Current password',
  new_password: 'New password',
  new_password_again: 'New password again',
};

/** What the account page shows beyond the user: the agents that may act, the keys agents made since `since`. */
type AgentView = { grantCount: number; agentKeys: AgentMadeKey[]; since: number; afterChange: boolean };

function agentKeysSection(signedIn: DashboardUser, view: AgentView): Html {
  if (view.agentKeys.length === 0) return html``;
  const rows = joinHtml(
    view.agentKeys.map(
      (key) => html`<tr><td data-label="Key"><code>${key.masked}</code> <span class="note">${key.mode}</span></td>
<td data-label="Made by"><code>${key.clientId}</code></td><td data-label="Created">${utcMinute(Date.parse(key.createdAt))}</td>
<td><form method="post" action="${ACCOUNT_PATH}/api-keys/${encodeURIComponent(key.keyId)}/revoke?since=${view.since}">${csrfInput(signedIn.csrfToken)}<button type="submit" class="danger" aria-label="Revoke the key ending ${key.masked.slice(1)}">Revoke</button></form></td></tr>`,
    ),
    html`\n`,
  );
  return html`<section aria-labelledby="agent-keys-heading"><h2 id="agent-keys-heading">API keys made by coding agents</h2>
<p>Coding agents made these keys since ${utcMinute(view.since)}, ${view.afterChange ? 'while your previous password was in force' : 'when your password was set'}. Revoke any you do not recognise: a key keeps working until it is revoked, whatever happens to the agent.</p>
<table class="cards"><thead><tr><th scope="col">Key</th><th scope="col">Made by</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

function accountBody(signedIn: DashboardUser, problem: FieldProblem | undefined, view: AgentView): Html {
  const agents = view.grantCount
    ? html`<p class="choice"><input type="checkbox" id="revoke-agents" name="revoke_agents" value="yes" checked> <label for="revoke-agents">Also revoke every coding agent's access (${view.grantCount} authorized)</label></p>`
    : '';
  return html`<p>Signed in as <strong>${signedIn.user.email}</strong> since ${utcMinute(signedIn.session.createdAt)}.</p>
<section aria-labelledby="password-heading"><h2 id="password-heading">Change password</h2>
<form method="post" action="${ACCOUNT_PATH}/password" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'current_password', label: LABELS.current_password!, type: 'password', autocomplete: 'current-password', required: true }, problem)}
${labelledInput({ name: 'new_password', label: LABELS.new_password!, type: 'password', autocomplete: 'new-password', required: true, hint: 'At least 12 characters.' }, problem)}
${labelledInput({ name: 'new_password_again', label: LABELS.new_password_again!, type: 'password', autocomplete: 'new-password', required: true }, problem)}
${agents}
<p><button type="submit">Change password</button></p>
<p class="note">Your other browsers are signed out when the password changes; this one stays signed in. Agents you keep, and API keys, keep working: review them below and on the <a href="/dashboard/developers">Developers</a> and <a href="/dashboard/get-paid">Get paid</a> pages.</p></form></section>
<section aria-labelledby="two-factor-heading"><h2 id="two-factor-heading">Two-factor sign-in</h2>
<p>${signedIn.secondFactor.enrolled ? 'On: sign-in asks for your second factor after your password.' : 'Off: sign-in asks for your password only.'}${signedIn.secondFactor.required ? ' Your merchant requires it of every user.' : ''}</p>
<p><a href="${TWO_FACTOR_PATH}">${signedIn.secondFactor.enrolled ? 'Manage two-factor sign-in' : 'Set up two-factor sign-in'}</a></p></section>
${agentKeysSection(signedIn, view)}
<section aria-labelledby="everywhere-heading"><h2 id="everywhere-heading">Sign out everywhere</h2>
<p>Ends every session of yours, in every browser, this one included.</p>
<form method="post" action="${ACCOUNT_PATH}/sign-out-everywhere">${csrfInput(signedIn.csrfToken)}<button type="submit" class="danger">Sign out everywhere</button></form></section>`;
}

/** Keys made by agents since the password before the current one was set, or since `since` (a time given back by a change). */
async function agentView(context: AppContext, signedIn: DashboardUser, since?: number): Promise<AgentView> {
  const from = since ?? (await passwordSetAt(context.db, signedIn.user.id)) ?? signedIn.user.createdAt;
  const [grants, agentKeys] = await Promise.all([
    listGrants(context.db, signedIn.user.merchantId),
    keysMadeByAgentsSince(context.db, signedIn.user.merchantId, from),
  ]);
  return { grantCount: grants.length, agentKeys, since: from, afterChange: since !== undefined };
}

/** A `since` of the query: a time in the past, else none. */
function sinceOf(context: AppContext, query: unknown): number | undefined {
  const value = (query as Record<string, unknown>).since;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) return undefined;
  const since = Number(value);
  return since <= context.now() ? since : undefined;
}

async function sendAccount(
  context: AppContext,
  reply: FastifyReply,
  signedIn: DashboardUser,
  status: number,
  problem?: FieldProblem,
  notice?: string,
  since?: number,
  refusal?: string,
) {
  const view = await agentView(context, signedIn, since);
  return sendPage(
    reply,
    status,
    dashboardPage({
      signedIn,
      section: 'account',
      ...(notice ? { notice } : {}),
      ...(problem ? { problem: `${LABELS[problem.field] ?? problem.field} ${problem.message}.` } : refusal ? { problem: refusal } : {}),
      body: accountBody(signedIn, problem, view),
    }),
  );
}

/** Account: change password (optionally revoking every coding agent), the API keys agents made, sign out everywhere. */
export function registerAccount(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    { method: 'GET', url: ACCOUNT_PATH, permission: 'account', summary: "The signed-in user's account: change password, sign out everywhere" },
    async (signedIn, request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      const revoked = /^\d{1,6}$/.test(query.agents_revoked ?? '') ? Number(query.agents_revoked) : 0;
      const notices: Record<string, string> = {
        password: `Password changed. Your other browsers are signed out${revoked ? `, and ${revoked} coding agent${revoked === 1 ? '' : 's'} lost ${revoked === 1 ? 'its' : 'their'} access` : ''}.`,
        'api-key': 'API key revoked: requests with it are refused from now on.',
      };
      return sendAccount(context, reply, signedIn, 200, undefined, notices[query.changed ?? ''], sinceOf(context, request.query));
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ACCOUNT_PATH}/password`,
      permission: 'account',
      summary: "Changes the signed-in user's password (form post)",
      description:
        "Takes `current_password`, `new_password`, `new_password_again`, `revoke_agents` (`yes`: also revoke every coding agent's grant of the merchant; the form ticks it) and `csrf`. Every session of the user ends; this browser gets a new one. The account page it goes back to lists the API keys coding agents made while the previous password was in force.",
      responses: {
        303: { description: 'Changed: back to the account page, which says so' },
        400: { description: 'Refused: the account page again, naming the field' },
        403: { description: 'No CSRF token, or posted from another origin' },
      },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const next = fields.new_password ?? '';
      const refuse = (field: string, message: string) => sendAccount(context, reply, signedIn, 400, { field, message });
      const weak = passwordProblem(next);
      if (weak) return refuse('new_password', weak);
      if (next !== fields.new_password_again) return refuse('new_password_again', 'does not match the new password');
      const wrong = await passwordRefusal(context, signedIn, fields.current_password);
      if (wrong) return refuse('current_password', wrong);
      const previousSetAt = (await passwordSetAt(context.db, signedIn.user.id)) ?? signedIn.user.createdAt;
      const now = context.now();
      await setPassword(context.db, signedIn.user.email, next, now, undefined, actorOf(signedIn.user, request));
      await endAllUserSessions(context.db, signedIn.user.id);
      const revoked = fields.revoke_agents === 'yes' ? await revokeEveryGrant(context.db, signedIn.user.merchantId, now) : 0;
      await signIn(context, request, reply, signedIn.user);
      return reply.redirect(`${ACCOUNT_PATH}?changed=password&agents_revoked=${revoked}&since=${previousSetAt}`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ACCOUNT_PATH}/api-keys/{keyId}/revoke`,
      permission: 'keys',
      summary: 'Revokes an API key of the merchant listed among those coding agents made (form post)',
      responses: {
        303: { description: 'Revoked: back to the account page' },
        404: { description: 'No such active key of this merchant: the account page, saying so' },
        403: { description: 'No CSRF token, or posted from another origin' },
      },
    },
    async (signedIn, request, reply) => {
      const { keyId } = request.params as { keyId: string };
      const since = sinceOf(context, request.query);
      const revoked = await withActivity(
        context.db,
        signedIn.user.merchantId,
        actorOf(signedIn.user, request),
        (trx) => revokeApiKey(trx, keyId, context.now(), signedIn.user.merchantId),
        (yes) => (yes ? { type: 'api_key_revoked', mode: null, detail: { id: keyId } } : undefined),
        context.now(),
      );
      if (!revoked)
        return sendAccount(context, reply, signedIn, 404, undefined, undefined, since, 'No such API key: it was revoked already, or it is not one of yours.');
      return reply.redirect(`${ACCOUNT_PATH}?changed=api-key${since === undefined ? '' : `&since=${since}`}`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ACCOUNT_PATH}/sign-out-everywhere`,
      permission: 'account',
      summary: "Ends every session of the signed-in user, this browser's included (form post)",
      responses: { 303: { description: 'Signed out: on to the sign-in page' }, 403: { description: 'No CSRF token, or posted from another origin' } },
    },
    async (signedIn, _request, reply) => {
      await endAllUserSessions(context.db, signedIn.user.id);
      forgetSession(context, reply);
      return reply.redirect('/sign-in', 303);
    },
  );
}
