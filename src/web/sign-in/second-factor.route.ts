import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { attemptSucceeded, ipSubject, reserveAttempt, secondFactorSubject } from '../../accounts/throttle.ts';
import { type CodeCheck, checkSecondFactorCode, secondFactorStanding } from '../../accounts/two-factor.ts';
import { secondFactorGiven } from '../../accounts/user-sessions.ts';
import type { User } from '../../accounts/users.ts';
import { awaitingSecondFactor, currentUser, formCsrfToken, type SignedIn, safeReturnPath, signIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { addFormRoute } from '../kit/forms.ts';
import { html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';

const TAG = 'Merchant sign-in';
export const SECOND_FACTOR_PATH = '/sign-in/second-factor';
/** Where a user without a second factor enrols (the dashboard's account page). */
export const ENROL_PATH = '/dashboard/account/two-factor';

/**
 * After the password (or the identity provider, or a reset link): a user with a second factor is
 * only past the password until it gives it; a user without one is signed in, and sent to enrol when
 * the merchant requires a second factor of everyone.
 */
export async function afterFirstFactor(context: AppContext, request: FastifyRequest, reply: FastifyReply, user: User, returnTo: string) {
  const standing = await secondFactorStanding(context.db, user.id);
  await signIn(context, request, reply, user, { secondFactorDue: standing.enrolled });
  if (standing.enrolled) return reply.redirect(`${SECOND_FACTOR_PATH}?return_to=${encodeURIComponent(returnTo)}`, 303);
  return reply.redirect(standing.required ? ENROL_PATH : returnTo, 303);
}

/** What a refused code is told: the same words for any wrong code, and a replay named as such. */
export function codeRefusal(check: Exclude<CodeCheck, { taken: unknown }>): string {
  return check.refused === 'replayed'
    ? 'That code was used already. Wait for the next code of your authenticator app, or use an unused recovery code.'
    : 'That code is not right. Type the 6 digits your authenticator app shows now, or one of your recovery codes.';
}

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

function secondFactorPage(view: { csrf: string; returnTo: string; email: string; problem?: string }) {
  return page(
    'Two-factor sign-in · Till',
    html`<main><h1>Confirm it is you</h1>
<p>Signing in as <strong>${view.email}</strong>. Type the code your authenticator app shows for Till, or one of your recovery codes.</p>
${view.problem ? html`<p role="alert" class="problem" id="code-problem">${view.problem}</p>` : ''}
<form method="post" action="${SECOND_FACTOR_PATH}">
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="return_to" value="${view.returnTo}">
<p><label for="code">Code</label><br><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="16" autofocus spellcheck="false" autocapitalize="off"${view.problem ? html` aria-invalid="true" aria-describedby="code-problem"` : ''}></p>
<p><button type="submit">Sign in</button></p>
</form>
<p class="note">Lost your phone? A recovery code works once in place of a code. Without either, your operator can reset your second factor (see the dashboard guide).</p>
<form method="post" action="/sign-out"><button type="submit" class="secondary">Cancel and sign out</button></form></main>`,
  );
}

/** The second step of sign-in: a code (authenticator or recovery) from a browser past the password. */
export function registerSecondFactorPages(app: FastifyInstance, context: AppContext): void {
  const show = (request: FastifyRequest, reply: FastifyReply, pending: SignedIn, status: number, returnTo: string, problem?: string) =>
    sendPage(
      reply,
      status,
      secondFactorPage({ csrf: formCsrfToken(context, request, reply), returnTo, email: pending.user.email, ...(problem ? { problem } : {}) }),
    );

  addRoute(
    app,
    {
      method: 'GET',
      url: SECOND_FACTOR_PATH,
      summary: 'The second step of sign-in: the code of an authenticator app or a recovery code',
      tag: TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 303: { description: 'Not past the password: on to sign in (or signed in already: on to `return_to`)' } },
    },
    {},
    async (request, reply) => {
      const returnTo = safeReturnPath((request.query as Record<string, unknown>).return_to);
      const pending = await awaitingSecondFactor(context, request);
      if (!pending) return reply.redirect((await currentUser(context, request)) ? returnTo : `/sign-in?return_to=${encodeURIComponent(returnTo)}`, 303);
      return show(request, reply, pending, 200, returnTo);
    },
  );

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: SECOND_FACTOR_PATH,
      summary: 'Signs in with the second factor (form post from the second-factor page)',
      description:
        'Takes `code` (6 digits of the authenticator, or a recovery code), `csrf` and `return_to`. A code is taken once: a replay of the same time step, and a used recovery code, are refused. Guesses are throttled per user and per IP as sign-in attempts are.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed in: on to `return_to`' }, 401: HTML_RESPONSE, 403: HTML_RESPONSE, 429: HTML_RESPONSE },
    },
    {
      kind: 'signed-out',
      refuse: (_request, reply) =>
        sendPage(
          reply,
          403,
          page('Two-factor sign-in · Till', html`<main><h1>This form has expired</h1><p><a href="${SECOND_FACTOR_PATH}">Try again</a></p></main>`),
        ),
    },
    async (request, reply) => {
      const fields = formFields(request);
      const returnTo = safeReturnPath(fields.return_to);
      const pending = await awaitingSecondFactor(context, request);
      if (!pending) return reply.redirect(`/sign-in?return_to=${encodeURIComponent(returnTo)}`, 303);
      const subjects = [secondFactorSubject(pending.user.id), ipSubject(request.ip)];
      const wait = await reserveAttempt(context.db, subjects, context.now());
      if (wait > 0) {
        reply.header('retry-after', String(Math.ceil(wait / 1000)));
        return show(request, reply, pending, 429, returnTo, `Too many attempts. Try again in ${minutes(wait)} minute${minutes(wait) === 1 ? '' : 's'}.`);
      }
      const check = await checkSecondFactorCode(context.db, context.config.secretKey, pending.user.id, fields.code ?? '', context.now());
      if ('refused' in check) return show(request, reply, pending, 401, returnTo, codeRefusal(check));
      await attemptSucceeded(context.db, subjects);
      await secondFactorGiven(context.db, pending.session.idHash, context.now());
      return reply.redirect(returnTo, 303);
    },
  );
}
