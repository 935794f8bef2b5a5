import type { FastifyInstance } from 'fastify';
import { currentUser, redirectToSignIn, sessionCsrfValid } from '../accounts/web-session.ts';
import type { AppContext } from '../context.ts';
import { formFields, registerFormParser } from '../http/forms.ts';
import { escapeHtml, page, sendPage } from '../http/html.ts';
import { addRoute } from '../http/routes.ts';
import { type Grant, listGrants, revokeGrant } from './grants.ts';

const TAG = 'OAuth';
const HTML_RESPONSE = { description: 'An HTML page' };
const LIST_PATH = '/account/coding-agents';

/** A moment as people read it, in UTC, with its machine-readable form. */
function moment(ms: number | null): string {
  if (ms === null) return 'Never';
  const iso = new Date(ms).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}

function grantRow(grant: Grant, csrfToken: string): string {
  return `<tr>
<td data-label="Agent"><strong>${escapeHtml(grant.clientName)}</strong></td>
<td data-label="Client ID"><code>${escapeHtml(grant.clientId)}</code></td>
<td data-label="May"><ul class="scope-list">${grant.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join('')}</ul></td>
<td data-label="Authorized">${moment(grant.createdAt)}</td>
<td data-label="Last used">${moment(grant.lastUsedAt)}</td>
<td><form method="post" action="${LIST_PATH}/${encodeURIComponent(grant.id)}/revoke"><input type="hidden" name="csrf" value="${escapeHtml(csrfToken)}"><button type="submit" class="danger" aria-label="Revoke ${escapeHtml(grant.clientName)}">Revoke</button></form></td>
</tr>`;
}

/** The merchant's authorized coding agents, each with a button that revokes it at once. */
function codingAgentsPage(view: { email: string; grants: Grant[]; csrfToken: string; revoked: boolean }): string {
  const list = view.grants.length
    ? `<p>These agents may use your Till account, each with the scopes listed. Revoking one ends its access at once; it must ask you again to get it back.</p>
<table class="grants"><thead><tr><th scope="col">Agent</th><th scope="col">Client ID</th><th scope="col">May</th><th scope="col">Authorized</th><th scope="col">Last used</th><th scope="col">Access</th></tr></thead>
<tbody>
${view.grants.map((grant) => grantRow(grant, view.csrfToken)).join('\n')}
</tbody></table>`
    : '<p>No coding agent may use your account. An agent asks for access by sending you to a consent screen.</p>';
  return page(
    'Authorized coding agents · Till',
    `<main><p class="note"><a href="/account">Account</a> · signed in as <strong>${escapeHtml(view.email)}</strong></p>
<h1>Authorized coding agents</h1>
${view.revoked ? '<p role="status" class="done">Access revoked. The agent’s tokens stop working at its next call.</p>' : ''}
${list}</main>`,
  );
}

/** The merchant's page of authorized coding agents (grants), with revocation. */
export function registerCodingAgentsRoutes(app: FastifyInstance, context: AppContext): void {
  app.register(async (pages) => {
    registerFormParser(pages);

    addRoute(
      pages,
      {
        method: 'GET',
        url: LIST_PATH,
        summary: 'The signed-in merchant’s authorized coding agents, each with a revoke button',
        tag: TAG,
        security: 'none',
        responses: { 200: HTML_RESPONSE, 303: { description: 'Not signed in: on to the sign-in page' } },
      },
      {},
      async (request, reply) => {
        const signedIn = await currentUser(context, request);
        if (!signedIn) return redirectToSignIn(reply, LIST_PATH);
        const grants = await listGrants(context.db, signedIn.user.merchantId);
        const revoked = (request.query as Record<string, string | undefined>).revoked === '1';
        return sendPage(reply, 200, codingAgentsPage({ email: signedIn.user.email, grants, csrfToken: signedIn.csrfToken, revoked }));
      },
    );

    addRoute(
      pages,
      {
        method: 'POST',
        url: `${LIST_PATH}/{grantId}/revoke`,
        summary: 'Revokes one of the signed-in merchant’s coding agents (form post with the session CSRF token)',
        description: 'Its refresh tokens stop working, and its access tokens are refused at their next call. Only a grant of the signed-in user’s merchant.',
        tag: TAG,
        security: 'none',
        responses: { 303: { description: 'Revoked: back to the list, which says so' }, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
      },
      {},
      async (request, reply) => {
        const signedIn = await currentUser(context, request);
        if (!signedIn || !sessionCsrfValid(signedIn, formFields(request).csrf))
          return sendPage(
            reply,
            403,
            page('Revoke · Till', `<main><h1>This form has expired</h1><p><a href="${LIST_PATH}">Back to your coding agents</a></p></main>`),
          );
        const { grantId } = request.params as { grantId: string };
        if (!(await revokeGrant(context.db, grantId, 'merchant', context.now(), signedIn.user.merchantId)))
          return sendPage(
            reply,
            404,
            page(
              'Revoke · Till',
              `<main><h1>No such coding agent</h1><p>It was already revoked, or it is not one of your account’s.</p><p><a href="${LIST_PATH}">Back to your coding agents</a></p></main>`,
            ),
          );
        return reply.redirect(`${LIST_PATH}?revoked=1`, 303);
      },
    );
  });
}
