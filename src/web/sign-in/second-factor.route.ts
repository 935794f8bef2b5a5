import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticationOptions, listPasskeys, verifyPasskey } from '../../accounts/passkeys.ts';
import { attemptSucceeded, ipSubject, reserveAttempt, secondFactorSubject } from '../../accounts/throttle.ts';
import { type CodeCheck, checkSecondFactorCode, secondFactorStanding, totpState } from '../../accounts/two-factor.ts';
import { secondFactorGiven } from '../../accounts/user-sessions.ts';
import type { User } from '../../accounts/users.ts';
import { awaitingSecondFactor, currentUser, formCsrfToken, type SignedIn, safeReturnPath, signIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { addFormRoute } from '../kit/forms.ts';
import { html } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { ceremonyAnswer, keepCeremony, passkeyScript, relyingParty, takeCeremony } from '../kit/passkeys.ts';
import { sendFormExpired } from './form-expired.ts';

const TAG = 'Merchant sign-in';
export const SECOND_FACTOR_PATH = '/sign-in/second-factor';
const PASSKEY_PATH = `${SECOND_FACTOR_PATH}/passkey`;
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

type Factors = { totp: boolean; passkeys: boolean };

function secondFactorPage(view: { csrf: string; returnTo: string; email: string; problem?: string; factors: Factors }) {
  const passkey = view.factors.passkeys
    ? html`<form method="post" action="${PASSKEY_PATH}" data-passkey="authenticate" data-options="${PASSKEY_PATH}/options">
<input type="hidden" name="csrf" value="${view.csrf}"><input type="hidden" name="return_to" value="${view.returnTo}"><input type="hidden" name="response" value="">
<p><button type="submit">Use a passkey</button> <span data-passkey-status role="status"></span></p></form>${passkeyScript()}`
    : '';
  return page(
    'Two-factor sign-in · Till',
    html`<main><h1>Confirm it is you</h1>
<p>Signing in as <strong>${view.email}</strong>. ${view.factors.totp ? 'Type the code your authenticator app shows for Till, or one of your recovery codes' : 'Use your passkey'}${view.factors.totp && view.factors.passkeys ? ', or use a passkey' : ''}.</p>
${view.problem ? html`<p role="alert" class="problem" id="code-problem">${view.problem}</p>` : ''}
${passkey}${view.factors.totp ? codeForm(view) : ''}
<p class="note">Lost your phone or passkey? A recovery code works once in place of a code. Without either, your operator can reset your second factor (see the dashboard guide).</p>
<form method="post" action="/sign-out"><button type="submit" class="secondary">Cancel and sign out</button></form></main>`,
  );
}

function codeForm(view: { csrf: string; returnTo: string; problem?: string }) {
  return html`<form method="post" action="${SECOND_FACTOR_PATH}">
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="return_to" value="${view.returnTo}">
<p><label for="code">Code</label><br><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="16" autofocus spellcheck="false" autocapitalize="off"${view.problem ? html` aria-invalid="true" aria-describedby="code-problem"` : ''}></p>
<p><button type="submit">Sign in</button></p>
</form>`;
}

/** The second step of sign-in: a code (authenticator or recovery) from a browser past the password. */
export function registerSecondFactorPages(app: FastifyInstance, context: AppContext): void {
  const show = async (request: FastifyRequest, reply: FastifyReply, pending: SignedIn, status: number, returnTo: string, problem?: string) => {
    const [totp, passkeys] = await Promise.all([totpState(context.db, pending.user.id), listPasskeys(context.db, pending.user.id)]);
    const factors = { totp: totp.enrolled, passkeys: passkeys.length > 0 };
    return sendPage(
      reply,
      status,
      secondFactorPage({ csrf: formCsrfToken(context, request, reply), returnTo, email: pending.user.email, factors, ...(problem ? { problem } : {}) }),
    );
  };
  /** The browser giving its second factor: past the password, or signed in and stepping up. */
  const confirming = async (request: FastifyRequest) => (await awaitingSecondFactor(context, request)) ?? (await currentUser(context, request));
  const formExpired = (_request: FastifyRequest, reply: FastifyReply) =>
    sendFormExpired(reply, 'Two-factor sign-in · Till', html`<p><a href="${SECOND_FACTOR_PATH}">Try again</a></p>`);

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
      const query = request.query as Record<string, unknown>;
      const returnTo = safeReturnPath(query.return_to);
      // A signed-in user comes here for a step-up (`step_up=1`): the same page makes the browser fresh again.
      const signedIn = await currentUser(context, request);
      const pending = (await awaitingSecondFactor(context, request)) ?? (query.step_up === '1' ? signedIn : undefined);
      if (!pending) return reply.redirect(signedIn ? returnTo : `/sign-in?return_to=${encodeURIComponent(returnTo)}`, 303);
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
      refuse: formExpired,
    },
    async (request, reply) => {
      const fields = formFields(request);
      const returnTo = safeReturnPath(fields.return_to);
      const pending = await confirming(request);
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

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${PASSKEY_PATH}/options`,
      summary: "The options of a passkey sign-in (JSON, for the page's script): the challenge and the user's own passkeys",
      tag: TAG,
      security: 'none',
      responses: { 200: { description: 'The options for navigator.credentials.get' }, 404: { description: 'Not past the password, or no passkey' } },
    },
    { kind: 'signed-out', refuse: formExpired },
    async (request, reply) => {
      const pending = await confirming(request);
      const ceremony = pending && (await authenticationOptions(context.db, relyingParty(context), pending.user.id, context.now()));
      if (!ceremony) return reply.code(404).send({ error: { code: 'not_found', message: 'No passkey sign-in is under way here' } });
      keepCeremony(context, reply, ceremony.sealed);
      return reply.header('cache-control', 'no-store').send(ceremony.options);
    },
  );

  addFormRoute(
    app,
    context,
    {
      method: 'POST',
      url: PASSKEY_PATH,
      summary: 'Signs in with a passkey as the second factor (form post of the page’s script: `response`, the browser’s answer)',
      description: 'Only a passkey of the user past the password is taken (another user’s is refused); attempts count as second-factor guesses.',
      tag: TAG,
      security: 'none',
      responses: { 303: { description: 'Signed in: on to `return_to`' }, 401: HTML_RESPONSE, 403: HTML_RESPONSE, 429: HTML_RESPONSE },
    },
    { kind: 'signed-out', refuse: formExpired },
    async (request, reply) => {
      const fields = formFields(request);
      const returnTo = safeReturnPath(fields.return_to);
      const pending = await confirming(request);
      if (!pending) return reply.redirect(`/sign-in?return_to=${encodeURIComponent(returnTo)}`, 303);
      const sealed = takeCeremony(context, request, reply);
      const subjects = [secondFactorSubject(pending.user.id), ipSubject(request.ip)];
      const wait = await reserveAttempt(context.db, subjects, context.now());
      if (wait > 0) {
        reply.header('retry-after', String(Math.ceil(wait / 1000)));
        return show(request, reply, pending, 429, returnTo, `Too many attempts. Try again in ${minutes(wait)} minute${minutes(wait) === 1 ? '' : 's'}.`);
      }
      const answer = ceremonyAnswer(fields.response);
      const verdict =
        answer === undefined
          ? 'No passkey answer came: this needs the page’s script.'
          : await verifyPasskey(context.db, relyingParty(context), pending.user.id, sealed, answer, context.now());
      if (verdict !== true) return show(request, reply, pending, 401, returnTo, verdict);
      await attemptSucceeded(context.db, subjects);
      await secondFactorGiven(context.db, pending.session.idHash, context.now());
      return reply.redirect(returnTo, 303);
    },
  );
}
