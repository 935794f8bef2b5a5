import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { beginUpstreamSignIn, finishUpstreamSignIn, type PendingSignIn, upstreamProvider } from '../../accounts/oidc.ts';
import { SIGN_UP_PATH } from '../../accounts/sign-ups.ts';
import { attemptSucceeded, reserveAttempt, signInSubjects } from '../../accounts/throttle.ts';
import { endUserSession } from '../../accounts/user-sessions.ts';
import { checkPassword, findUserByEmail, normalizeEmail } from '../../accounts/users.ts';
import {
  currentUser,
  forgetSession,
  formCsrfToken,
  knownBrowserId,
  redirectToSignIn,
  safeReturnPath,
  secureCookies,
  sessionCookie,
} from '../../accounts/web-session.ts';
import { openSecret, sealSecret } from '../../common/secrets.ts';
import type { AppContext } from '../../context.ts';
import { clearCookie, cookieName, formFields, readCookies, setCookie } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { addFormRoute } from '../kit/forms.ts';
import { html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { registerInvitationPages } from './invitation.route.ts';
import { FORGOT_PATH, registerPasswordResetPages } from './reset.route.ts';
import { afterFirstFactor, registerSecondFactorPages } from './second-factor.route.ts';
import { registerSignUpPages } from './sign-up.route.ts';

const TAG = 'Merchant sign-in';

/** The one answer to every refused sign-in: the same for an unknown email and a wrong password. */
export const WRONG_CREDENTIALS = 'The email or password is not right.';

function signInPage(view: { csrf: string; returnTo: string; email?: string; problem?: string; upstream: boolean; sandbox: boolean; signUp: boolean }) {
  return page(
    'Sign in · Till',
    html`<main>${view.sandbox ? html`<p class="sandbox-banner" role="note"><strong>Sandbox:</strong> the money here is fake.</p>` : ''}<h1>Sign in to Till</h1>
<p>The dashboard of your Till merchant account: orders, payment links, payouts and developer access.</p>
${view.problem ? html`<p role="alert" class="problem">${view.problem}</p>` : ''}
<form method="post" action="/sign-in">
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="return_to" value="${view.returnTo}">
<p><label for="email">Email</label><br><input id="email" name="email" type="email" autocomplete="username" required value="${view.email ?? ''}"></p>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
<p><a href="${FORGOT_PATH}">Forgot your password?</a></p>
${view.signUp ? html`<p>New to Till? <a href="${SIGN_UP_PATH}">Open an account</a></p>` : ''}
${view.upstream ? html`<p><a href="/sign-in/oidc?return_to=${encodeURIComponent(view.returnTo)}">Sign in with your identity provider</a></p>` : ''}</main>`,
  );
}

/** A short page: a heading, a line and a link on (the refusals of sign-in and sign-out). */
const notePage = (title: string, heading: string, line: string | undefined, link: { href: string; text: string }) =>
  page(title, html`<main><h1>${heading}</h1>${line === undefined ? '' : html`<p>${line}</p>`}<p><a href="${link.href}">${link.text}</a></p></main>`);

/** The upstream sign-in's sealed cookie opens as that and nothing else. */
const OIDC_PENDING_BINDING = 'cookie:till_oidc';

const oidcCookie = (context: AppContext) => cookieName('till_oidc', secureCookies(context));

/** The sealed state of an upstream sign-in under way, if the cookie is ours and not expired. */
function readPending(context: AppContext, sealed: string | undefined): PendingSignIn | undefined {
  if (!sealed) return undefined;
  try {
    const pending = JSON.parse(openSecret(sealed, context.config.secretKey, OIDC_PENDING_BINDING)) as PendingSignIn;
    return pending.expiresAt > context.now() ? { ...pending, returnTo: safeReturnPath(pending.returnTo) } : undefined;
  } catch {
    return undefined;
  }
}

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

/** The sign-in, sign-out and account pages of merchant users; registered in the web scope, which guards their form posts. */
export function registerSignInPages(app: FastifyInstance, context: AppContext): void {
  registerPasswordResetPages(app, context);
  registerInvitationPages(app, context);
  registerSecondFactorPages(app, context);
  registerSignUpPages(app, context);
  addRoute(
    app,
    { method: 'GET', url: '/sign-in', summary: 'The sign-in page of merchant users', tag: TAG, security: 'none', responses: { 200: HTML_RESPONSE } },
    {},
    async (request, reply) => {
      const returnTo = safeReturnPath((request.query as Record<string, unknown>).return_to);
      if (await currentUser(context, request)) return reply.redirect(returnTo, 303);
      return sendPage(
        reply,
        200,
        signInPage({
          csrf: formCsrfToken(context, request, reply),
          returnTo,
          upstream: !!context.config.oidc,
          sandbox: context.config.mode === 'sandbox',
          signUp: context.config.signUp,
        }),
      );
    },
  );

  const signInAgain = (request: FastifyRequest, reply: FastifyReply, status: number, problem: string) => {
    const fields = formFields(request);
    const email = normalizeEmail(fields.email ?? '').slice(0, 254);
    return sendPage(
      reply,
      status,
      signInPage({
        csrf: formCsrfToken(context, request, reply),
        returnTo: safeReturnPath(fields.return_to),
        email,
        problem,
        upstream: !!context.config.oidc,
        sandbox: context.config.mode === 'sandbox',
        signUp: context.config.signUp,
      }),
    );
  };

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: '/sign-in',
      summary: 'Signs a merchant user in (form post from the sign-in page)',
      description:
        'Takes `email`, `password`, `csrf` and `return_to` as a form. Repeated failures slow down, then lock, the email from that IP, the email from browsers it never signed in from, and the IP, for a while; a browser the email signed in from before is throttled on its own. An unknown email and a wrong password get the same answer.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed in: on to `return_to`' }, 401: HTML_RESPONSE, 403: HTML_RESPONSE, 429: HTML_RESPONSE },
    },
    { kind: 'signed-out', refuse: (request, reply) => signInAgain(request, reply, 403, 'This form has expired. Please sign in again.') },
    async (request, reply) => {
      const fields = formFields(request);
      const returnTo = safeReturnPath(fields.return_to);
      const email = normalizeEmail(fields.email ?? '').slice(0, 254);
      const again = (status: number, problem: string) => signInAgain(request, reply, status, problem);
      const subjects = signInSubjects(email, request.ip, knownBrowserId(context, request, email));
      const wait = await reserveAttempt(context.db, subjects, context.now());
      if (wait > 0) {
        reply.header('retry-after', String(Math.ceil(wait / 1000)));
        return again(429, `Too many attempts. Try again in ${minutes(wait)} minute${minutes(wait) === 1 ? '' : 's'}.`);
      }
      const user = email && fields.password ? await checkPassword(context.db, email, fields.password) : undefined;
      if (!user) return again(401, WRONG_CREDENTIALS);
      await attemptSucceeded(context.db, subjects);
      return afterFirstFactor(context, request, reply, user, returnTo);
    },
  );

  addRoute(
    app,
    {
      method: 'GET',
      url: '/sign-in/oidc',
      summary: 'Sign-in through the upstream OpenID Connect provider (TILL_OIDC_ISSUER): on to the provider',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: "On to the provider's authorization endpoint" }, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const provider = await upstreamProvider(context.config);
      if (!provider)
        return sendPage(
          reply,
          404,
          notePage('Sign in · Till', 'No identity provider is configured', undefined, { href: '/sign-in', text: 'Sign in with a password' }),
        );
      const returnTo = safeReturnPath((request.query as Record<string, unknown>).return_to);
      const { url, pending } = await beginUpstreamSignIn(provider, returnTo, context.now());
      setCookie(reply, oidcCookie(context), sealSecret(JSON.stringify(pending), context.config.secretKey, OIDC_PENDING_BINDING), {
        secure: secureCookies(context),
        maxAgeSeconds: 600,
      });
      return reply.redirect(url.href, 303);
    },
  );

  addRoute(
    app,
    {
      method: 'GET',
      url: '/sign-in/oidc/callback',
      summary: "The upstream provider's answer: a verified email that is a user's signs that user in",
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed in: on to `return_to`' }, 401: HTML_RESPONSE, 403: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const provider = await upstreamProvider(context.config);
      const refused = (status: number, text: string) => {
        clearCookie(reply, oidcCookie(context), { secure: secureCookies(context) });
        return sendPage(reply, status, notePage('Sign in · Till', 'Not signed in', text, { href: '/sign-in', text: 'Try again' }));
      };
      const pending = readPending(context, readCookies(request)[oidcCookie(context)]);
      if (!provider || !pending) return refused(401, 'The sign-in with your identity provider expired or was not started here.');
      let email: string | undefined;
      try {
        email = await finishUpstreamSignIn(provider, new URL(request.url, context.config.baseUrl), pending);
      } catch (error) {
        request.log.warn({ err: error }, 'upstream sign-in refused');
        return refused(401, 'Your identity provider did not confirm the sign-in.');
      }
      if (!email) return refused(403, 'Your identity provider did not give a verified email address.');
      const user = await findUserByEmail(context.db, email);
      if (!user)
        return refused(403, `No Till user has the email ${email}. Ask your operator to add one: till users create --merchant MERCHANT_ID --email ${email}`);
      clearCookie(reply, oidcCookie(context), { secure: secureCookies(context) });
      return afterFirstFactor(context, request, reply, user, pending.returnTo);
    },
  );

  /** Signing out: the session ends (when the browser has one) and the browser goes to sign in. */
  const signOut = async (request: FastifyRequest, reply: FastifyReply) => {
    const token = readCookies(request)[sessionCookie(context)];
    if (token) await endUserSession(context.db, token);
    forgetSession(context, reply);
    return reply.redirect('/sign-in', 303);
  };

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: '/sign-out',
      summary: 'Signs the merchant user out (form post with the session CSRF token)',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed out: on to the sign-in page' }, 403: HTML_RESPONSE },
    },
    {
      kind: 'signed-in',
      signedOut: signOut,
      refuse: (_request, reply) => sendPage(reply, 403, notePage('Sign out · Till', 'This form has expired', undefined, { href: '/account', text: 'Back' })),
    },
    (_signedIn, request, reply) => signOut(request, reply),
  );

  addRoute(
    app,
    {
      method: 'GET',
      url: '/account',
      summary: 'Who is signed in, with a sign-out button',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 303: { description: 'Not signed in: on to the sign-in page' } },
    },
    {},
    async (request, reply) => {
      const signedIn = await currentUser(context, request);
      if (!signedIn) return redirectToSignIn(reply, '/account');
      return sendPage(
        reply,
        200,
        page(
          'Account · Till',
          html`<main><h1>Signed in</h1>
<p>You are signed in as <strong>${signedIn.user.email}</strong> for merchant <code>${signedIn.user.merchantId}</code>.</p>
<p><a href="/dashboard">Open the dashboard</a>: payments, settings and your payout wallet.</p>
<p><a href="/dashboard/developers">Authorized coding agents</a>: the agents you let use your account, and revoking them.</p>
<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="${signedIn.csrfToken}"><button type="submit">Sign out</button></form></main>`,
        ),
      );
    },
  );
}
