import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { completePasswordReset, RESET_LIFETIME_MS, RESET_PATH, requestPasswordReset, resetLinkUser } from '../../accounts/password-resets.ts';
import { emailProblem, normalizeEmail, PASSWORD_MIN_LENGTH, UserError } from '../../accounts/users.ts';
import { formCsrfToken } from '../../accounts/web-session.ts';
import { TillError } from '../../common/errors.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { accountMailMode } from '../../mail/notices.ts';
import { addFormRoute } from '../kit/forms.ts';
import { type Html, html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { afterFirstFactor } from './second-factor.route.ts';

const TAG = 'Merchant sign-in';
export const FORGOT_PATH = '/sign-in/forgot';

/** The one answer to a reset asked for, whether or not the address is a user's. */
export const RESET_SENT = 'If a Till user has this address, a link to choose a new password is on its way to it. The link works once, for 30 minutes.';

const problemLine = (problem: string | undefined): Html => (problem ? html`<p role="alert" class="problem">${problem}</p>` : html``);

function forgotPage(view: { csrf: string; email?: string; problem?: string; sent?: boolean }): Html {
  return page(
    'Forgot your password · Till',
    html`<main><h1>Forgot your password?</h1>${
      view.sent
        ? html`<p role="status">${RESET_SENT}</p><p><a href="/sign-in">Back to sign in</a></p>`
        : html`<p>Type the address you sign in with: we mail you a link to choose a new password.</p>${problemLine(view.problem)}
<form method="post" action="${FORGOT_PATH}"><input type="hidden" name="csrf" value="${view.csrf}">
<p><label for="email">Email</label><br><input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${view.email ?? ''}"${view.problem ? html` aria-invalid="true"` : ''}></p>
<p><button type="submit">Mail me a link</button></p></form><p><a href="/sign-in">Back to sign in</a></p>`
    }</main>`,
  );
}

function resetPage(view: { csrf: string; token: string; email: string; problem?: string }): Html {
  return page(
    'Choose a new password · Till',
    html`<main><h1>Choose a new password</h1><p>For <strong>${view.email}</strong>. Every browser signed in as you is signed out, and you are signed in here.</p>${problemLine(view.problem)}
<form method="post" action="${RESET_PATH}"><input type="hidden" name="csrf" value="${view.csrf}"><input type="hidden" name="token" value="${view.token}">
<input type="text" name="username" autocomplete="username" value="${view.email}" hidden>
<p><label for="password">New password</label><br><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" aria-describedby="password-hint"><br><small id="password-hint">At least ${PASSWORD_MIN_LENGTH} characters.</small></p>
<p><label for="confirm">New password again</label><br><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}"></p>
<p><button type="submit">Set the password and sign in</button></p></form></main>`,
  );
}

const expiredPage = page(
  'Choose a new password · Till',
  html`<main><h1>This link cannot be used</h1><p>A reset link works once, for ${RESET_LIFETIME_MS / 60_000} minutes, and only the newest one mailed to you. Ask for a new one.</p><p><a href="${FORGOT_PATH}">Mail me a new link</a></p></main>`,
);

/** Password reset by an emailed link: asked for at /sign-in/forgot, used at /sign-in/reset. In the web scope, whose guard these form posts go through. */
export function registerPasswordResetPages(app: FastifyInstance, context: AppContext): void {
  const mailMode = accountMailMode(context.config.modes);
  const tokenOf = (value: unknown) => (typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined);

  addRoute(
    app,
    {
      method: 'GET',
      url: FORGOT_PATH,
      summary: 'The form to ask for a password-reset link by mail',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE },
    },
    {},
    async (request, reply) => sendPage(reply, 200, forgotPage({ csrf: formCsrfToken(context, request, reply) })),
  );

  const forgotAgain = (request: FastifyRequest, reply: FastifyReply, status: number, problem: string, email?: string) =>
    sendPage(reply, status, forgotPage({ csrf: formCsrfToken(context, request, reply), problem, ...(email !== undefined ? { email } : {}) }));

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: FORGOT_PATH,
      summary: 'Mails a password-reset link (form post)',
      description:
        "Takes `email` and `csrf`. The same answer whether or not the address is a user's; at most 3 requests per address and 10 per client IP an hour (429 beyond, for any address).",
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 429: HTML_RESPONSE },
    },
    { kind: 'signed-out', refuse: (request, reply) => forgotAgain(request, reply, 403, 'This form has expired. Please try again.') },
    async (request, reply) => {
      const email = normalizeEmail(formFields(request).email ?? '').slice(0, 254);
      const problem = emailProblem(email);
      if (problem) return forgotAgain(request, reply, 400, `The email ${problem}: write it as name@example.com.`, email);
      try {
        await requestPasswordReset(context.db, { email, ip: request.ip }, { now: context.now(), baseUrl: context.config.baseUrl, mailMode });
      } catch (error) {
        if (!(error instanceof TillError) || error.code !== 'rate_limited') throw error;
        reply.header('retry-after', String(error.retryAfterSeconds ?? 3600));
        return forgotAgain(request, reply, 429, 'Too many reset requests. Try again in an hour.', email);
      }
      return sendPage(reply, 200, forgotPage({ csrf: formCsrfToken(context, request, reply), sent: true }));
    },
  );

  addRoute(
    app,
    {
      method: 'GET',
      url: RESET_PATH,
      summary: 'The page of an emailed reset link (?token=…): choose a new password',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const token = tokenOf((request.query as Record<string, unknown>).token);
      const user = token && (await resetLinkUser(context.db, token, context.now()));
      if (!token || !user) return sendPage(reply, 404, expiredPage);
      return sendPage(reply, 200, resetPage({ csrf: formCsrfToken(context, request, reply), token, email: user.email }));
    },
  );

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: RESET_PATH,
      summary: 'Sets a new password through an emailed reset link, and signs in (form post)',
      description: 'Takes `token`, `password`, `confirm` and `csrf`. The link works once; every other browser of the user is signed out.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed in: on to the dashboard' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    { kind: 'signed-out', refuse: (_request, reply) => sendPage(reply, 403, expiredPage) },
    async (request, reply) => {
      const fields = formFields(request);
      const token = tokenOf(fields.token);
      const user = token && (await resetLinkUser(context.db, token, context.now()));
      if (!token || !user) return sendPage(reply, 404, expiredPage);
      const again = (problem: string) => sendPage(reply, 400, resetPage({ csrf: formCsrfToken(context, request, reply), token, email: user.email, problem }));
      const password = fields.password ?? '';
      if (password !== (fields.confirm ?? '')) return again('The two passwords are not the same.');
      let reset: Awaited<ReturnType<typeof completePasswordReset>>;
      try {
        reset = await completePasswordReset(context.db, token, password, { now: context.now(), mailMode });
      } catch (error) {
        if (error instanceof UserError) return again(`The new ${error.message}.`);
        throw error;
      }
      if (!reset) return sendPage(reply, 404, expiredPage);
      // A new password is no second factor: a user with one still gives it.
      return afterFirstFactor(context, request, reply, reset, '/dashboard');
    },
  );
}
