import type { FastifyInstance, FastifyReply } from 'fastify';
import { endAllUserSessions } from '../../accounts/user-sessions.ts';
import { passwordProblem, setPassword } from '../../accounts/users.ts';
import { forgetSession, type SignedIn, signIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { escapeHtml, sendPage } from '../../http/html.ts';
import { csrfInput, type FieldProblem, labelledInput, utcMinute } from './form-controls.ts';
import { dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';
import { passwordRefusal } from './reauth.ts';

export const ACCOUNT_PATH = '/dashboard/account';

const LABELS: Record<string, string> = {
  current_password: 'Current password',
  new_password: 'New password',
  new_password_again: 'New password again',
};

function accountBody(signedIn: SignedIn, problem: FieldProblem | undefined): string {
  return `<p>Signed in as <strong>${escapeHtml(signedIn.user.email)}</strong> since ${escapeHtml(utcMinute(signedIn.session.createdAt))}.</p>
<section aria-labelledby="password-heading"><h2 id="password-heading">Change password</h2>
<form method="post" action="${ACCOUNT_PATH}/password" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'current_password', label: LABELS.current_password!, type: 'password', autocomplete: 'current-password', required: true }, problem)}
${labelledInput({ name: 'new_password', label: LABELS.new_password!, type: 'password', autocomplete: 'new-password', required: true, hint: 'At least 12 characters.' }, problem)}
${labelledInput({ name: 'new_password_again', label: LABELS.new_password_again!, type: 'password', autocomplete: 'new-password', required: true }, problem)}
<p><button type="submit">Change password</button></p>
<p class="note">Your other browsers are signed out when the password changes; this one stays signed in.</p></form></section>
<section aria-labelledby="everywhere-heading"><h2 id="everywhere-heading">Sign out everywhere</h2>
<p>Ends every session of yours, in every browser, this one included.</p>
<form method="post" action="${ACCOUNT_PATH}/sign-out-everywhere">${csrfInput(signedIn.csrfToken)}<button type="submit" class="danger">Sign out everywhere</button></form></section>`;
}

function sendAccount(context: AppContext, reply: FastifyReply, signedIn: SignedIn, status: number, problem?: FieldProblem, notice?: string) {
  return sendPage(
    reply,
    status,
    dashboardPage({
      signedIn,
      section: 'account',
      mode: context.config.mode,
      ...(notice ? { notice } : {}),
      ...(problem ? { problem: `${LABELS[problem.field] ?? problem.field} ${problem.message}.` } : {}),
      body: accountBody(signedIn, problem),
    }),
  );
}

/** Account: change password, sign out everywhere. */
export function registerAccount(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    { method: 'GET', url: ACCOUNT_PATH, summary: "The signed-in user's account: change password, sign out everywhere" },
    async (signedIn, request, reply) => {
      const changed = (request.query as Record<string, string | undefined>).changed === 'password';
      return sendAccount(context, reply, signedIn, 200, undefined, changed ? 'Password changed. Your other browsers are signed out.' : undefined);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ACCOUNT_PATH}/password`,
      summary: "Changes the signed-in user's password (form post)",
      description: 'Takes `current_password`, `new_password`, `new_password_again` and `csrf`. Every session of the user ends; this browser gets a new one.',
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
      const wrong = await passwordRefusal(context, request, signedIn, fields.current_password);
      if (wrong) return refuse('current_password', wrong);
      await setPassword(context.db, signedIn.user.email, next, context.now());
      await endAllUserSessions(context.db, signedIn.user.id);
      await signIn(context, request, reply, signedIn.user);
      return reply.redirect(`${ACCOUNT_PATH}?changed=password`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ACCOUNT_PATH}/sign-out-everywhere`,
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
