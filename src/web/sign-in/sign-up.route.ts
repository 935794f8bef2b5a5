import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  completeSignUp,
  requestSignUp,
  SIGN_UP_CONFIRM_PATH,
  SIGN_UP_LIFETIME_MS,
  SIGN_UP_PATH,
  SignUpError,
  type SignUpRefusal,
  signUpOfToken,
} from '../../accounts/sign-ups.ts';
import { normalizeEmail, PASSWORD_MIN_LENGTH } from '../../accounts/users.ts';
import { formCsrfToken, signIn } from '../../accounts/web-session.ts';
import { TillError } from '../../common/errors.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { accountMailMode } from '../../mail/notices.ts';
import { BUSINESS_NAME_MAX_LENGTH } from '../../merchants/merchants.ts';
import { addFormRoute } from '../kit/forms.ts';
import { type Html, html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { sendFormExpired } from './form-expired.ts';

const TAG = 'Merchant sign-in';

/** The one answer to a sign-up, whether or not the address already signs in to Till. */
export const SIGN_UP_SENT = `Check your inbox: we mailed a link to confirm the address. It works once, for ${SIGN_UP_LIFETIME_MS / 3_600_000} hours; the account is opened when you use it.`;

const FIELD_LABELS = { name: 'Business name', email: 'Email', password: 'Password' } as const;
type Field = keyof typeof FIELD_LABELS;

type Form = { csrf: string; name?: string; email?: string; problem?: { field: Field | 'confirm'; text: string }; sent?: boolean };

function signUpPage(view: Form): Html {
  const invalid = (field: Field | 'confirm') => (view.problem?.field === field ? html` aria-invalid="true" aria-describedby="problem"` : '');
  return page(
    'Open a Till account',
    html`<main><h1>Open a Till account</h1>${
      view.sent
        ? html`<p role="status">${SIGN_UP_SENT}</p><p><a href="/sign-in">Back to sign in</a></p>`
        : html`<p>A merchant account to take USDC payments, starting in test mode. We mail you a link to confirm your address.</p>${
            view.problem ? html`<p role="alert" class="problem" id="problem">${view.problem.text}</p>` : ''
          }
<form method="post" action="${SIGN_UP_PATH}"><input type="hidden" name="csrf" value="${view.csrf}">
<p><label for="name">Business name</label><br><input id="name" name="name" type="text" autocomplete="organization" required maxlength="${BUSINESS_NAME_MAX_LENGTH}" value="${view.name ?? ''}"${invalid('name')}></p>
<p><label for="email">Email</label><br><input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${view.email ?? ''}"${invalid('email')}></p>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" aria-describedby="password-hint"${invalid('password')}><br><small id="password-hint">At least ${PASSWORD_MIN_LENGTH} characters.</small></p>
<p><label for="confirm">Password again</label><br><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}"${invalid('confirm')}></p>
<p><button type="submit">Mail me the link</button></p></form><p>Already have an account? <a href="/sign-in">Sign in</a></p>`
    }</main>`,
  );
}

/** Why a link cannot be used, in words; nothing was made. */
const REFUSALS: Record<SignUpRefusal, string> = {
  used: 'This link was already used: it works once. Sign in with the address and password you chose.',
  expired: `This link has expired: it works for ${SIGN_UP_LIFETIME_MS / 3_600_000} hours. Sign up again to get a new one.`,
  taken: 'This address already signs in to Till: sign in with it instead.',
  unknown: 'This is not a sign-up link of this service. Check that the whole link was copied from the mail.',
};

const refusalPage = (reason: SignUpRefusal) =>
  page(
    'Open a Till account',
    html`<main><h1>This link cannot be used</h1><p role="alert" class="problem">${REFUSALS[reason]}</p><p><a href="/sign-in">Go to sign in</a> · <a href="${SIGN_UP_PATH}">Sign up again</a></p></main>`,
  );

function confirmPage(view: { csrf: string; token: string; email: string; businessName: string }): Html {
  return page(
    'Open a Till account',
    html`<main><h1>Open the account of ${view.businessName}</h1><p>With the address <strong>${view.email}</strong> as its owner, and the password you chose. You are signed in at once, in test mode.</p>
<form method="post" action="${SIGN_UP_CONFIRM_PATH}"><input type="hidden" name="csrf" value="${view.csrf}"><input type="hidden" name="token" value="${view.token}">
<p><button type="submit">Open the account</button></p></form></main>`,
  );
}

/** Every sign-up address while the operator has not turned sign-up on: as if there were no such page. */
const offPage = page(
  'Not found · Till',
  html`<main><h1>Page not found</h1><p>Accounts on this Till are opened by its operator.</p><p><a href="/sign-in">Go to sign in</a></p></main>`,
);

/**
 * Self-serve sign-up, open only when the operator turns it on (TILL_SIGN_UP; off, its pages answer
 * 404, and a post 404 once past the one guard of form posts, which refuses any post without its
 * token with 403): the form at /sign-up, and the emailed link's page at /sign-up/confirm, whose
 * button opens the account and signs in. The link's page asks for a click so a mail scanner
 * fetching the link opens nothing.
 */
export function registerSignUpPages(app: FastifyInstance, context: AppContext): void {
  const mailMode = accountMailMode(context.config.modes);
  const tokenOf = (value: unknown) => (typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined);
  const off = !context.config.signUp;
  const sendOff = (reply: FastifyReply) => sendPage(reply, 404, offPage);

  addRoute(
    app,
    {
      method: 'GET',
      url: SIGN_UP_PATH,
      summary: 'The sign-up form of a new merchant account (only with TILL_SIGN_UP=true)',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => (off ? sendOff(reply) : sendPage(reply, 200, signUpPage({ csrf: formCsrfToken(context, request, reply) }))),
  );

  const again = (request: FastifyRequest, reply: FastifyReply, status: number, problem: Form['problem']) => {
    const fields = formFields(request);
    return sendPage(
      reply,
      status,
      signUpPage({
        csrf: formCsrfToken(context, request, reply),
        name: (fields.name ?? '').slice(0, BUSINESS_NAME_MAX_LENGTH),
        email: normalizeEmail(fields.email ?? '').slice(0, 254),
        ...(problem ? { problem } : {}),
      }),
    );
  };

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: SIGN_UP_PATH,
      summary: 'Signs up a new merchant account: mails the confirmation link (form post)',
      description:
        'Takes `name`, `email`, `password`, `confirm` and `csrf`. Nothing is made until the mailed link is used. The same answer whether or not the address already signs in to Till (its user is mailed that instead); at most 3 sign-ups per address and 10 per client IP an hour (429 beyond).',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 404: HTML_RESPONSE, 429: HTML_RESPONSE },
    },
    {
      kind: 'signed-out',
      refuse: (request, reply) => again(request, reply, 403, { field: 'name', text: 'This form has expired. Please try again.' }),
    },
    async (request, reply) => {
      if (off) return sendOff(reply);
      const fields = formFields(request);
      const password = fields.password ?? '';
      try {
        if (password && password !== (fields.confirm ?? ''))
          return again(request, reply, 400, { field: 'confirm', text: 'Password again: the two passwords are not the same.' });
        await requestSignUp(
          context.db,
          { businessName: fields.name ?? '', email: fields.email ?? '', password, ip: request.ip },
          { now: context.now(), baseUrl: context.config.baseUrl, mailMode },
        );
      } catch (error) {
        if (error instanceof SignUpError) return again(request, reply, 400, { field: error.field, text: `${FIELD_LABELS[error.field]} ${error.message}.` });
        if (!(error instanceof TillError) || error.code !== 'rate_limited') throw error;
        reply.header('retry-after', String(error.retryAfterSeconds ?? 3600));
        return again(request, reply, 429, { field: 'email', text: 'Too many sign-ups. Try again in an hour.' });
      }
      return sendPage(reply, 200, signUpPage({ csrf: formCsrfToken(context, request, reply), sent: true }));
    },
  );

  addRoute(
    app,
    {
      method: 'GET',
      url: SIGN_UP_CONFIRM_PATH,
      summary: 'The page of an emailed sign-up link (?token=…): open the account',
      description: 'A link already used, expired or unknown gets a page saying which (404).',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      if (off) return sendOff(reply);
      const token = tokenOf((request.query as Record<string, unknown>).token);
      const pending = token ? await signUpOfToken(context.db, token, context.now()) : ({ refused: 'unknown' } as const);
      if (!token || 'refused' in pending) return sendPage(reply, 404, refusalPage('refused' in pending ? pending.refused : 'unknown'));
      return sendPage(
        reply,
        200,
        confirmPage({ csrf: formCsrfToken(context, request, reply), token, email: pending.email, businessName: pending.businessName }),
      );
    },
  );

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: SIGN_UP_CONFIRM_PATH,
      summary: 'Opens the account of a sign-up link: the merchant and its owner are made, and the browser signed in (form post)',
      description: 'Takes `token` and `csrf`. The link works once; a used, expired or unknown one is refused (404) and makes nothing.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Opened and signed in: on to the dashboard' }, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {
      kind: 'signed-out',
      refuse: (_request, reply) => sendFormExpired(reply, 'Open a Till account', html`<p role="alert" class="problem">Open the link from the mail again.</p>`),
    },
    async (request, reply) => {
      if (off) return sendOff(reply);
      const token = tokenOf(formFields(request).token);
      if (!token) return sendPage(reply, 404, refusalPage('unknown'));
      const opened = await completeSignUp(context.db, { token, ip: request.ip, userAgent: request.headers['user-agent'] ?? null }, context.now());
      if ('refused' in opened) return sendPage(reply, 404, refusalPage(opened.refused));
      await signIn(context, request, reply, opened.user);
      return reply.redirect('/dashboard', 303);
    },
  );
}
