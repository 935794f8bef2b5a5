import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acceptInvitation, INVITATION_PATH, InvitationError, type InvitationRefusal, invitationOfToken, stateOf } from '../../accounts/invitations.ts';
import { ROLE_LABELS } from '../../accounts/roles.ts';
import { PASSWORD_MIN_LENGTH } from '../../accounts/users.ts';
import { formCsrfToken, signIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { addFormRoute } from '../kit/forms.ts';
import { type Html, html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { sendFormExpired } from './form-expired.ts';

const TAG = 'Merchant sign-in';

type Pending = { token: string; email: string; merchantName: string; role: string };

function acceptPage(view: Pending & { csrf: string; problem?: string }): Html {
  return page(
    `Join ${view.merchantName} · Till`,
    html`<main><h1>Join ${view.merchantName}</h1><p>You are invited as <strong>${view.role}</strong>, with the address <strong>${view.email}</strong>. Choose a password to finish; you are signed in at once.</p>${view.problem ? html`<p role="alert" class="problem" id="password-problem">${view.problem}</p>` : ''}
<form method="post" action="${INVITATION_PATH}"><input type="hidden" name="csrf" value="${view.csrf}"><input type="hidden" name="token" value="${view.token}">
<input type="text" name="username" autocomplete="username" value="${view.email}" aria-label="Email" hidden>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" aria-describedby="password-hint${view.problem ? ' password-problem' : ''}"${view.problem ? html` aria-invalid="true"` : ''}><br><small id="password-hint">At least ${PASSWORD_MIN_LENGTH} characters.</small></p>
<p><label for="confirm">Password again</label><br><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}"></p>
<p><button type="submit">Join and sign in</button></p></form></main>`,
  );
}

/** Why a link cannot be used, in words; nothing was changed. */
const REFUSALS: Record<InvitationRefusal, string> = {
  accepted: 'This invitation was already accepted: a link works once. Sign in with the password chosen then.',
  revoked: 'This invitation was revoked by the team. Ask them for a new one if you should still join.',
  expired: 'This invitation has expired: a link works for 7 days. Ask the team to invite you again.',
  taken: 'This address already has a Till sign-in: sign in with it, or ask the team to invite another address.',
  unknown: 'This is not an invitation link of this service. Check that the whole link was copied from the mail.',
};

const refusalPage = (reason: keyof typeof REFUSALS) =>
  page(
    'Invitation · Till',
    html`<main><h1>This invitation cannot be used</h1><p role="alert" class="problem">${REFUSALS[reason]}</p><p><a href="/sign-in">Go to sign in</a></p></main>`,
  );

/** Accepting an invitation to a merchant's team: its emailed link's page, and the form that sets the password and signs in. */
export function registerInvitationPages(app: FastifyInstance, context: AppContext): void {
  const tokenOf = (value: unknown) => (typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined);

  /** The invitation of a link while it can be used; otherwise its refusal page is sent (404) and undefined answered. */
  async function pendingOf(reply: FastifyReply, value: unknown): Promise<Pending | undefined> {
    const token = tokenOf(value);
    const invitation = token ? await invitationOfToken(context.db, token) : undefined;
    const state = invitation ? stateOf(invitation, context.now()) : 'unknown';
    if (!token || !invitation || state !== 'pending') {
      await sendPage(reply, 404, refusalPage(state === 'pending' ? 'unknown' : state));
      return undefined;
    }
    return { token, email: invitation.email, merchantName: invitation.merchantName, role: ROLE_LABELS[invitation.role] };
  }

  addRoute(
    app,
    {
      method: 'GET',
      url: INVITATION_PATH,
      summary: 'The page of an emailed invitation (?token=…): choose a password to join the team',
      description: 'A link already used, revoked, expired or unknown gets a page saying which (404).',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const pending = await pendingOf(reply, (request.query as Record<string, unknown>).token);
      if (!pending) return reply;
      return sendPage(reply, 200, acceptPage({ ...pending, csrf: formCsrfToken(context, request, reply) }));
    },
  );

  const again = (request: FastifyRequest, reply: FastifyReply, pending: Pending, problem: string) =>
    sendPage(reply, 400, acceptPage({ ...pending, csrf: formCsrfToken(context, request, reply), problem }));

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: INVITATION_PATH,
      summary: 'Accepts an invitation: sets the password, makes the user with its role, and signs in (form post)',
      description: 'Takes `token`, `password`, `confirm` and `csrf`. The link works once; a used, revoked or expired one is refused (404) and changes nothing.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Joined and signed in: on to the dashboard' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {
      kind: 'signed-out',
      refuse: (_request, reply) =>
        sendFormExpired(
          reply,
          'Invitation · Till',
          html`<p role="alert" class="problem">Open the link from the mail again, and choose your password there.</p>`,
        ),
    },
    async (request, reply) => {
      const fields = formFields(request);
      const pending = await pendingOf(reply, fields.token);
      if (!pending) return reply;
      const password = fields.password ?? '';
      if (password !== (fields.confirm ?? '')) return again(request, reply, pending, 'Password again: the two passwords are not the same.');
      let accepted: Awaited<ReturnType<typeof acceptInvitation>>;
      try {
        accepted = await acceptInvitation(
          context.db,
          { token: pending.token, password, ip: request.ip, userAgent: request.headers['user-agent'] ?? null },
          context.now(),
        );
      } catch (error) {
        if (error instanceof InvitationError) return again(request, reply, pending, `Password ${error.message}.`);
        throw error;
      }
      if ('refused' in accepted) return sendPage(reply, 404, refusalPage(accepted.refused));
      await signIn(context, request, reply, accepted.user);
      return reply.redirect('/dashboard', 303);
    },
  );
}
