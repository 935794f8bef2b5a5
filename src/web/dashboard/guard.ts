import type { FastifyReply, FastifyRequest } from 'fastify';
import { PERMISSIONS, type Permission, ROLE_LABELS } from '../../accounts/roles.ts';
import { currentUser, redirectToSignIn, type SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { html } from '../kit/html.ts';
import { modeView } from '../kit/mode.ts';
import { page, sendPage } from '../kit/page.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';

/** The signed-in user of a dashboard page; otherwise the browser is sent to sign in (and undefined is answered). */
export async function signedInOrRedirect(context: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> {
  const signedIn = await currentUser(context, request);
  if (!signedIn) redirectToSignIn(reply, request.url);
  return signedIn;
}

/**
 * A dashboard form post that the web scope's guard (web/kit/forms.ts) refused: without its CSRF
 * token or from another origin → 403, with the dashboard's frame when the browser is signed in.
 */
export function refuseDashboardPost(context: AppContext, request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn | undefined) {
  const body = html`<p>The form was not sent from this dashboard, or it is too old. Go back, reload the page and try again.</p>`;
  if (!signedIn) return sendPage(reply, 403, page('This form has expired · Till', html`<main><h1>This form has expired</h1>${body}</main>`));
  return sendPage(
    reply,
    403,
    dashboardPage({ signedIn: { ...signedIn, modes: modeView(context, request) }, section: 'overview', heading: 'This form has expired', body }),
  );
}

/** The heading of the page a role's refusal shows (tests look for it). */
export const ROLE_REFUSED_HEADING = 'Your role does not allow this';

/** A route or form the signed-in user's role does not allow: 403, in the dashboard's frame, naming what the role lacks. */
export function refuseRole(reply: FastifyReply, signedIn: DashboardUser, permission: Permission) {
  const role = ROLE_LABELS[signedIn.user.role];
  const body = html`<p>You are signed in as <strong>${signedIn.user.email}</strong>. Your role, <strong>${role}</strong>, cannot ${PERMISSIONS[permission]} (the <code>${permission}</code> permission).</p>
<p>Ask an owner or an admin of your team to do it, or to give you a role that can.</p><p><a href="/dashboard">Back to the overview</a></p>`;
  return sendPage(reply, 403, dashboardPage({ signedIn, section: 'overview', heading: ROLE_REFUSED_HEADING, body }));
}
