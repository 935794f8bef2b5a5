import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { addRoute, type RouteDoc } from '../../http/routes.ts';
import { signedInForPost, signedInOrRedirect } from './guard.ts';

export const DASHBOARD_TAG = 'Dashboard';
export const HTML_RESPONSE = { description: 'An HTML page' };
export const SIGN_IN_REDIRECT = { description: 'Not signed in: on to the sign-in page' };

type Handler = (request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn) => Promise<unknown>;

/** A dashboard page behind sign-in: the handler runs only for a signed-in user. */
export function addDashboardPage(app: FastifyInstance, context: AppContext, doc: { url: string; summary: string }, handler: Handler): void {
  addRoute(
    app,
    { method: 'GET', ...doc, tag: DASHBOARD_TAG, security: 'none', responses: { 200: HTML_RESPONSE, 303: SIGN_IN_REDIRECT } },
    {},
    async (request, reply) => {
      const signedIn = await signedInOrRedirect(context, request, reply);
      return signedIn ? handler(request, reply, signedIn) : reply;
    },
  );
}

/** A dashboard form post: the handler runs only for a signed-in user, with the session's CSRF token, from our origin. */
export function addDashboardPost(
  app: FastifyInstance,
  context: AppContext,
  doc: { url: string; summary: string; description?: string; responses: RouteDoc['responses'] },
  handler: Handler,
): void {
  addRoute(app, { method: 'POST', ...doc, tag: DASHBOARD_TAG, security: 'none' }, {}, async (request, reply) => {
    const signedIn = await signedInForPost(context, request, reply);
    return signedIn ? handler(request, reply, signedIn) : reply;
  });
}
