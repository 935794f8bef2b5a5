import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual } from '../common/secrets.ts';
import type { AppContext } from '../context.ts';
import { clearCookie, cookieName, readCookies, setCookie } from '../http/forms.ts';
import { type Actor, recordActivity } from '../merchants/events.ts';
import { type SecondFactorStanding, secondFactorStanding } from './two-factor.ts';
import { readUserSession, type SessionTimeouts, type SignedInSession, sessionCsrfToken, startUserSession } from './user-sessions.ts';
import { findUser, type User } from './users.ts';

/** Cookies are Secure (and `__Host-` prefixed) exactly when the service is served over https. */
export const secureCookies = (context: AppContext) => context.config.baseUrl.startsWith('https:');
const timeouts = (context: AppContext): SessionTimeouts => ({
  idleSeconds: context.config.signInIdleSeconds,
  absoluteSeconds: context.config.signInMaxSeconds,
});

export const sessionCookie = (context: AppContext) => cookieName('till_session', secureCookies(context));
export const csrfCookie = (context: AppContext) => cookieName('till_csrf', secureCookies(context));

export const knownBrowserCookie = (context: AppContext) => cookieName('till_known_browser', secureCookies(context));
const KNOWN_BROWSER_SECONDS = 180 * 24 * 60 * 60;
const knownBrowserMac = (context: AppContext, email: string, id: string) =>
  createHmac('sha256', context.config.secretKey).update(`known-browser\n${email}\n${id}`).digest('base64url');

/**
 * The id of this browser when it has signed in as `email` before: its known-browser cookie, an id
 * and an HMAC of the id and the email under TILL_SECRET_KEY. Its password attempts for that email
 * are throttled on their own, so that nobody else's failures can lock it out.
 */
export function knownBrowserId(context: AppContext, request: FastifyRequest, email: string): string | undefined {
  const [id = '', mac = ''] = (readCookies(request)[knownBrowserCookie(context)] ?? '').split('.');
  if (!/^[\w-]{22}$/.test(id) || !mac) return undefined;
  return constantTimeEqual(knownBrowserMac(context, email, id), mac) ? id : undefined;
}

/** Marks the browser as one `email` signed in from (keeping its id when it has one). */
export function rememberBrowser(context: AppContext, request: FastifyRequest, reply: FastifyReply, email: string): void {
  const id = knownBrowserId(context, request, email) ?? randomBytes(16).toString('base64url');
  setCookie(reply, knownBrowserCookie(context), `${id}.${knownBrowserMac(context, email, id)}`, {
    secure: secureCookies(context),
    maxAgeSeconds: KNOWN_BROWSER_SECONDS,
  });
}

/** `secondFactor`: whether the user has one, and whether the merchant requires one of everyone. */
export type SignedIn = { user: User; session: SignedInSession; csrfToken: string; secondFactor: SecondFactorStanding };

/** The browser's session and its user, whether or not its second factor is still due. */
async function browserSession(context: AppContext, request: FastifyRequest): Promise<SignedIn | undefined> {
  const token = readCookies(request)[sessionCookie(context)];
  const session = await readUserSession(context.db, token, timeouts(context), context.now());
  if (!session) return undefined;
  const user = await findUser(context.db, session.userId);
  if (!user) return undefined;
  const secondFactor = await secondFactorStanding(context.db, user.id);
  return { user, session, csrfToken: sessionCsrfToken(context.config.secretKey, session.idHash), secondFactor };
}

/** The signed-in user of a request, with the CSRF token its forms carry; undefined when signed out or when its second factor is still due. */
export async function currentUser(context: AppContext, request: FastifyRequest): Promise<SignedIn | undefined> {
  const signedIn = await browserSession(context, request);
  return signedIn && !signedIn.session.secondFactorDue ? signedIn : undefined;
}

/** A browser past the password whose second factor is due (the second-factor page's), else undefined. */
export async function awaitingSecondFactor(context: AppContext, request: FastifyRequest): Promise<SignedIn | undefined> {
  const signedIn = await browserSession(context, request);
  return signedIn?.session.secondFactorDue ? signedIn : undefined;
}

/**
 * Starts a session for the user, ending the browser's previous one, and sets its cookie. With
 * `secondFactorDue` the browser is past the password only: signed in once it gives its second factor.
 */
export async function signIn(
  context: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  options: { secondFactorDue?: boolean } = {},
): Promise<void> {
  const previous = readCookies(request)[sessionCookie(context)];
  const now = context.now();
  // A browser this user never signed in from is a line of the activity log, written with the session.
  const newBrowser = knownBrowserId(context, request, user.email) === undefined;
  const token = await startUserSession(context.db, user.id, previous, timeouts(context), now, {
    ...options,
    alongside: async (trx) => {
      if (!newBrowser) return;
      const actor: Actor = { kind: 'user', id: user.id, label: user.email, ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
      await recordActivity(trx, user.merchantId, actor, { type: 'signed_in_new_browser', mode: null, detail: { email: user.email } }, now);
    },
  });
  setCookie(reply, sessionCookie(context), token, { secure: secureCookies(context), maxAgeSeconds: context.config.signInMaxSeconds });
  rememberBrowser(context, request, reply, user.email);
  // A new sign-in form token too, so one seen before sign-in is worth nothing after it.
  clearCookie(reply, csrfCookie(context), { secure: secureCookies(context) });
}

export function forgetSession(context: AppContext, reply: FastifyReply): void {
  clearCookie(reply, sessionCookie(context), { secure: secureCookies(context) });
}

/**
 * The signed-out forms' CSRF token (double submit): a random value in a cookie that the form
 * repeats in a hidden field. The browser's cookie is kept when it has one.
 */
export function formCsrfToken(context: AppContext, request: FastifyRequest, reply: FastifyReply): string {
  const existing = readCookies(request)[csrfCookie(context)];
  if (existing && /^[\w-]{43}$/.test(existing)) return existing;
  const token = randomBytes(32).toString('base64url');
  setCookie(reply, csrfCookie(context), token, { secure: secureCookies(context) });
  return token;
}

/** Whether a signed-out form's token matches its cookie. */
export function formCsrfValid(context: AppContext, request: FastifyRequest, presented: string | undefined): boolean {
  const expected = readCookies(request)[csrfCookie(context)];
  return !!expected && !!presented && constantTimeEqual(expected, presented);
}

/** Whether a signed-in form's token is the session's. */
export function sessionCsrfValid(signedIn: SignedIn, presented: string | undefined): boolean {
  return !!presented && constantTimeEqual(signedIn.csrfToken, presented);
}

/** Not signed in: on to the sign-in page, which comes back to `returnTo` (a path here). */
export const redirectToSignIn = (reply: FastifyReply, returnTo: string) => reply.redirect(`/sign-in?return_to=${encodeURIComponent(returnTo)}`, 303);

/** Where to go after sign-in: a path on this service only, never another site; the dashboard unless given. */
export function safeReturnPath(value: unknown): string {
  // A query may repeat return_to (an array) or carry it in brackets (an object): only a string is a path.
  if (
    typeof value !== 'string' ||
    !value.startsWith('/') ||
    value.startsWith('//') ||
    value.includes('\\') ||
    [...value].some((c) => c.charCodeAt(0) < 32) ||
    value.length > 2048
  )
    return '/dashboard';
  return value;
}
