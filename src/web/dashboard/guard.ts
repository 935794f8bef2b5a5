import type { FastifyReply, FastifyRequest } from 'fastify';
import { currentUser, redirectToSignIn, type SignedIn, sessionCsrfValid } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { sendPage } from '../../http/html.ts';
import { dashboardPage } from './layout.ts';

/** The signed-in user of a dashboard page; otherwise the browser is sent to sign in (and undefined is answered). */
export async function signedInOrRedirect(context: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> {
  const signedIn = await currentUser(context, request);
  if (!signedIn) redirectToSignIn(reply, request.url);
  return signedIn;
}

/**
 * Whether a form post came from one of our pages: the session's CSRF token, an Origin (when sent) that
 * is ours and a Sec-Fetch-Site (when sent) of same-origin. Dashboard pages send `Referrer-Policy:
 * same-origin`, so browsers post their forms with our Origin; a page under the service-wide
 * `no-referrer` posts with `Origin: null`, which tells nothing, so Sec-Fetch-Site (sent whatever the
 * referrer policy) decides then.
 */
export function formPostAllowed(context: AppContext, request: FastifyRequest, signedIn: SignedIn): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null' && origin !== new URL(context.config.baseUrl).origin) return false;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  return sessionCsrfValid(signedIn, formFields(request).csrf);
}

/**
 * The signed-in user of a dashboard form post, or undefined after answering: signed out → sign-in,
 * a post without its CSRF token or from another origin → 403.
 */
export async function signedInForPost(context: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> {
  const signedIn = await signedInOrRedirect(context, request, reply);
  if (!signedIn) return undefined;
  if (formPostAllowed(context, request, signedIn)) return signedIn;
  sendPage(
    reply,
    403,
    dashboardPage({
      signedIn,
      section: 'overview',
      heading: 'This form has expired',
      mode: context.config.mode,
      body: '<p>The form was not sent from this dashboard, or it is too old. Go back, reload the page and try again.</p>',
    }),
  );
  return undefined;
}
