import { escapeHtml, page } from '../http/html.ts';
import type { AuthorizationRequest } from './authorization-requests.ts';
import { SCOPES, type Scope } from './scopes.ts';

/**
 * Which boxes start ticked: the scopes the client asked for, except elevated ones, which the
 * merchant must tick themselves (spec 5.3), and those already granted to this client.
 */
export function preTicked(scope: (typeof SCOPES)[number], requested: Scope[], granted: Scope[]): boolean {
  return granted.includes(scope.scope) || (requested.includes(scope.scope) && !scope.elevated);
}

/** The consent screen: who asks, where the answer goes, and every grantable scope with a plain line. */
export function consentPage(view: { request: AuthorizationRequest; email: string; csrfToken: string; alreadyGranted: Scope[]; problem?: string }): string {
  const { request } = view;
  const redirectHost = new URL(request.redirectUri).host;
  const boxes = SCOPES.map((scope) => {
    const granted = view.alreadyGranted.includes(scope.scope);
    const id = `scope-${scope.scope.replace(':', '-')}`;
    const notes = [
      scope.elevated ? '<span class="tag tag-opt-in">opt-in</span>' : '',
      granted ? '<span class="tag tag-granted">already allowed</span>' : request.scopes.includes(scope.scope) ? '<span class="tag">requested</span>' : '',
    ].join('');
    return `<li><input type="checkbox" name="scope" value="${escapeHtml(scope.scope)}" id="${id}"${preTicked(scope, request.scopes, view.alreadyGranted) ? ' checked' : ''}${granted ? ' disabled' : ''}>
<label for="${id}"><code>${escapeHtml(scope.scope)}</code> ${notes}<br><span class="line">${escapeHtml(scope.line)}</span></label></li>`;
  }).join('\n');
  return page(
    'Allow access · Till',
    `<main class="consent"><h1>Allow <span class="client">${escapeHtml(request.clientName)}</span> to use your Till account?</h1>
<p>Signed in as <strong>${escapeHtml(view.email)}</strong>. Your answer is sent to <strong>${escapeHtml(redirectHost)}</strong>.</p>
<p class="note">The agent identifies itself with <code>${escapeHtml(request.clientId)}</code></p>
${view.problem ? `<p role="alert" class="problem">${escapeHtml(view.problem)}</p>` : ''}
<form method="post" action="/oauth/consent/${escapeHtml(request.id)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrfToken)}">
<fieldset><legend>What it may do</legend>
<p class="note">Opt-in scopes are never ticked for you, even when the agent asks for them. Untick anything you do not want to allow.</p>
<ul class="scopes">
${boxes}
</ul></fieldset>
<p class="note">You can revoke this access at any time under <a href="/dashboard/developers">Developers</a> in your dashboard.</p>
<p class="actions"><button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form></main>`,
  );
}

/** An authorization request refused before its redirect URI could be trusted: told to the person, not the client. */
export function authorizationErrorPage(problem: string): string {
  return page(
    'Authorization refused · Till',
    `<main><h1>This authorization request cannot go on</h1><p role="alert" class="problem">${escapeHtml(problem)}</p>
<p>Start again from your coding agent. Nothing was granted.</p></main>`,
  );
}
