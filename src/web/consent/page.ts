import type { KeyMode } from '../../common/modes.ts';
import type { AuthorizationRequest } from '../../oauth/authorization-requests.ts';
import { preTicked } from '../../oauth/consent.ts';
import { SCOPES, type Scope } from '../../oauth/scopes.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { page } from '../kit/page.ts';

/** Which data the agent is given, as the consent screen names it. */
const MODE_DATA: Record<KeyMode, { name: string; line: string }> = {
  test: { name: 'Test data', line: 'test payments with fake money, and test API keys only' },
  live: { name: 'Live data', line: 'real payments and live API keys' },
};

/**
 * The consent screen: who asks, where the answer goes, which mode's data it gets (the mode the
 * merchant's dashboard shows), and every grantable scope with a plain line.
 */
export function consentPage(view: {
  request: AuthorizationRequest;
  email: string;
  csrfToken: string;
  alreadyGranted: Scope[];
  mode: KeyMode;
  bothModesServed: boolean;
  problem?: string;
  /** The step-up's field, when allowing needs a fresh second factor. */
  stepUp: Html;
}): Html {
  const { request } = view;
  const redirectHost = new URL(request.redirectUri).host;
  const boxes = SCOPES.map((scope) => {
    const granted = view.alreadyGranted.includes(scope.scope);
    const id = `scope-${scope.scope.replace(':', '-')}`;
    const notes = [
      scope.elevated ? html`<span class="tag tag-opt-in">opt-in</span>` : '',
      granted
        ? html`<span class="tag tag-granted">already allowed</span>`
        : request.scopes.includes(scope.scope)
          ? html`<span class="tag">requested</span>`
          : '',
    ];
    return html`<li><input type="checkbox" name="scope" value="${scope.scope}" id="${id}"${preTicked(scope, request.scopes, view.alreadyGranted) ? html` checked` : ''}${granted ? html` disabled` : ''}>
<label for="${id}"><code>${scope.scope}</code> ${notes}<br><span class="line">${scope.line}</span></label></li>`;
  });
  return page(
    'Allow access · Till',
    html`<main class="consent"><h1>Allow <span class="client">${request.clientName}</span> to use your Till account?</h1>
<p>Signed in as <strong>${view.email}</strong>. Your answer is sent to <strong>${redirectHost}</strong>.</p>
<p class="note">The agent identifies itself with <code>${request.clientId}</code></p>
<p class="consent-mode">It gets access to your <strong>${MODE_DATA[view.mode].name}</strong> only: ${MODE_DATA[view.mode].line}.${
      view.bothModesServed
        ? html` To give it the other mode’s data instead, switch modes in your <a href="/dashboard">dashboard</a> and start again from the agent.`
        : ''
    }</p>
${view.problem ? html`<p role="alert" class="problem">${view.problem}</p>` : ''}
<form method="post" action="/oauth/consent/${request.id}">
<input type="hidden" name="csrf" value="${view.csrfToken}">
<input type="hidden" name="mode" value="${view.mode}">
<fieldset><legend>What it may do</legend>
<p class="note">Opt-in scopes are never ticked for you, even when the agent asks for them. Untick anything you do not want to allow.</p>
<ul class="scopes">
${joinHtml(
  boxes,
  html`
`,
)}
</ul></fieldset>
<p class="note">You can revoke this access at any time under <a href="/dashboard/developers">Developers</a> in your dashboard.</p>
${view.stepUp}
<p class="actions"><button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form></main>`,
  );
}

/** An authorization request refused before its redirect URI could be trusted: told to the person, not the client. */
export function authorizationErrorPage(problem: string): Html {
  return page(
    'Authorization refused · Till',
    html`<main><h1>This authorization request cannot go on</h1><p role="alert" class="problem">${problem}</p>
<p>Start again from your coding agent. Nothing was granted.</p></main>`,
  );
}
