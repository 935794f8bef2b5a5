import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { can, type Permission } from '../../accounts/roles.ts';
import { redirectToSignIn, type SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import type { FormLimits } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { addFormRoute } from '../kit/forms.ts';
import { modeView } from '../kit/mode.ts';
import { HTML_RESPONSE } from '../kit/page.ts';
import { refuseDashboardPost, refuseRole, signedInOrRedirect } from './guard.ts';
import type { DashboardUser } from './layout.ts';

/** Where a user sets up a second factor (two-factor.route.ts, which imports this file). */
export const TWO_FACTOR_PATH = '/dashboard/account/two-factor';

export const DASHBOARD_TAG = 'Dashboard';
export const SIGN_IN_REDIRECT = { description: 'Not signed in: on to the sign-in page' };

type Responses = Record<number, { description: string }>;
export type DashboardRouteDoc = {
  method: 'GET' | 'POST';
  url: string;
  summary: string;
  description?: string;
  responses?: Responses;
  /** A form post that sends a file takes a larger body than a form's few fields. */
  bodyLimit?: number;
  /** And other parts: its files and fields. */
  formLimits?: FormLimits;
  /** What the signed-in user's role must allow (accounts/roles.ts); any other role gets the 403 page. */
  permission: Permission;
  /** Open to a user the merchant requires a second factor of who has none yet (the pages that set one up); every other page sends them there. */
  enrolment?: boolean;
};
export type DashboardHandler = (signedIn: DashboardUser, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const GET_RESPONSES: Responses = { 200: HTML_RESPONSE, 303: SIGN_IN_REDIRECT };
const ROLE_REFUSED = { description: "The user's role does not allow this page (an HTML page naming what it lacks)" };
const POST_RESPONSES: Responses = {
  303: { description: 'Done (or not signed in: on to sign-in)' },
  403: { description: "No CSRF token, or from another origin, or the user's role does not allow it" },
};

/** Each dashboard route's permission, by its doc (the app's `routeDocs`): the role matrix test reads it. */
const permissions = new WeakMap<object, Permission>();
export const permissionOf = (doc: object): Permission | undefined => permissions.get(doc);

/**
 * A dashboard route with its doc: a GET answers only a signed-in user (others go to sign in); a POST
 * only a form of ours (the web scope's one guard: signed in, with the CSRF token, from our origin).
 * The handler gets the user, with the mode the dashboard shows (mode.ts).
 */
export function addDashboardRoute(
  app: FastifyInstance,
  context: AppContext,
  { bodyLimit, formLimits, permission, enrolment, ...doc }: DashboardRouteDoc,
  handler: DashboardHandler,
): void {
  if (!permission) throw new Error(`${doc.method} ${doc.url}: a dashboard route names the permission it needs`);
  const allowed: DashboardHandler = async (signedIn, request, reply) =>
    can(signedIn.user.role, permission) ? handler(signedIn, request, reply) : refuseRole(reply, signedIn, permission);
  // The merchant requires a second factor and this user has none: every page but enrolment's sends them to set one up.
  const mustEnrol = (signedIn: SignedIn) => !enrolment && signedIn.secondFactor.required && !signedIn.secondFactor.enrolled;
  const description = `${doc.description ? `${doc.description} ` : ''}Needs the \`${permission}\` permission (docs/dashboard.md, "Roles").`;
  if (doc.method === 'POST') {
    const responses = { ...POST_RESPONSES, ...doc.responses };
    const routeDoc = { ...doc, description, method: 'POST' as const, tag: DASHBOARD_TAG, security: 'none' as const, responses };
    permissions.set(routeDoc, permission);
    addFormRoute(
      app,
      context,
      routeDoc,
      {
        kind: 'signed-in',
        signedOut: (request, reply) => redirectToSignIn(reply, request.url),
        refuse: (request, reply, signedIn) => refuseDashboardPost(context, request, reply, signedIn),
      },
      async (signedIn: SignedIn, request, reply) =>
        mustEnrol(signedIn) ? reply.redirect(TWO_FACTOR_PATH, 303) : allowed({ ...signedIn, modes: modeView(context, request) }, request, reply),
      { ...(bodyLimit ? { bodyLimit } : {}), ...(formLimits ? { formLimits } : {}) },
    );
    return;
  }
  const responses = { ...GET_RESPONSES, 403: ROLE_REFUSED, ...doc.responses };
  const routeDoc = { ...doc, description, tag: DASHBOARD_TAG, security: 'none' as const, responses };
  permissions.set(routeDoc, permission);
  addRoute(app, routeDoc, {}, async (request, reply) => {
    const signedIn = await signedInOrRedirect(context, request, reply);
    if (!signedIn) return reply;
    if (mustEnrol(signedIn)) return reply.redirect(TWO_FACTOR_PATH, 303);
    return allowed({ ...signedIn, modes: modeView(context, request) }, request, reply);
  });
}
