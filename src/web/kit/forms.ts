import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { currentUser, formCsrfValid, type SignedIn, sessionCsrfValid } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { DEFAULT_FORM_LIMITS, type FormLimits, formFields, registerFormParser, registerMultipartParser } from '../../http/forms.ts';
import { addRoute, type RouteDoc } from '../../http/routes.ts';

/**
 * Whether the browser says a form post came from one of our pages: an Origin (when sent) that is
 * ours and a Sec-Fetch-Site (when sent) of same-origin. A page under the service-wide `no-referrer`
 * posts with `Origin: null`, which tells nothing, so Sec-Fetch-Site (sent whatever the referrer
 * policy) decides then.
 */
export function postedFromOurPages(context: AppContext, request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null' && origin !== new URL(context.config.baseUrl).origin) return false;
  const site = request.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin';
}

/** The whole check of a signed-in form post: from our pages, with the session's CSRF token. */
export function formPostAllowed(context: AppContext, request: FastifyRequest, signedIn: SignedIn): boolean {
  return postedFromOurPages(context, request) && sessionCsrfValid(signedIn, formFields(request).csrf);
}

type Answer = Promise<unknown> | unknown;

/**
 * How a form post is guarded. `signed-in`: the session's CSRF token (a signed-out browser gets
 * `signedOut`); `signed-out` (the sign-in form, before any session): the double-submit token of its
 * cookie. Both: an Origin and a Sec-Fetch-Site of ours. A refused post is answered by `refuse` (403).
 */
export type FormGuard =
  | {
      kind: 'signed-in';
      signedOut: (request: FastifyRequest, reply: FastifyReply) => Answer;
      refuse: (request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn | undefined) => Answer;
    }
  | { kind: 'signed-out'; refuse: (request: FastifyRequest, reply: FastifyReply) => Answer };

type Handler<G extends FormGuard> = G extends { kind: 'signed-in' }
  ? (signedIn: SignedIn, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
  : (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The handlers made by addFormRoute: the web scope refuses to register any other POST. */
const guardedHandlers = new WeakSet<object>();

/** The signed-in user of a post, found before its body was read. */
const signedInPosts = new WeakMap<FastifyRequest, SignedIn>();

/**
 * The one way to add a form post to the web scope. The checks that need no body run before it is
 * read (a refused post's body is never parsed): an Origin and a Sec-Fetch-Site of ours, and for a
 * `signed-in` post the browser's session, from its cookie. Then the body, within the route's size
 * (`bodyLimit`, 16 KiB unless given) and parts (`formLimits`, DEFAULT_FORM_LIMITS unless given),
 * and its CSRF token; then the handler, given the signed-in user (for `signed-in` posts). A form
 * that sends a file sets both.
 */
export function addFormRoute<G extends FormGuard>(
  app: FastifyInstance,
  context: AppContext,
  doc: Omit<RouteDoc, 'method'> & { method: 'POST' },
  guard: G,
  handler: Handler<G>,
  options: { bodyLimit?: number; formLimits?: FormLimits } = {},
): void {
  const beforeBody = async (request: FastifyRequest, reply: FastifyReply) => {
    // An answer sent before the body is read ends the connection: a client that stops sending the
    // body once answered would otherwise leave it half-read, held open until it times out.
    if (!postedFromOurPages(context, request)) {
      reply.code(403).header('connection', 'close');
      await (guard.kind === 'signed-out' ? guard.refuse(request, reply) : guard.refuse(request, reply, undefined));
      return reply;
    }
    if (guard.kind === 'signed-out') return;
    const signedIn = await currentUser(context, request);
    if (!signedIn) {
      reply.header('connection', 'close');
      await guard.signedOut(request, reply);
      return reply;
    }
    signedInPosts.set(request, signedIn);
  };
  const guarded = async (request: FastifyRequest, reply: FastifyReply) => {
    if (guard.kind === 'signed-out') {
      if (!formCsrfValid(context, request, formFields(request).csrf)) {
        reply.code(403);
        return guard.refuse(request, reply);
      }
      return (handler as Handler<{ kind: 'signed-out'; refuse: never }>)(request, reply);
    }
    const signedIn = signedInPosts.get(request)!;
    if (!sessionCsrfValid(signedIn, formFields(request).csrf)) {
      reply.code(403);
      return guard.refuse(request, reply, signedIn);
    }
    return (handler as Handler<Extract<FormGuard, { kind: 'signed-in' }>>)(signedIn, request, reply);
  };
  guardedHandlers.add(guarded);
  addRoute(
    app,
    doc,
    {
      onRequest: beforeBody,
      config: { formLimits: options.formLimits ?? DEFAULT_FORM_LIMITS },
      ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    },
    guarded,
  );
}

const unsafeMethod = (method: RouteOptions['method']) => (Array.isArray(method) ? method : [method]).some((m) => !['GET', 'HEAD', 'OPTIONS'].includes(m));

/**
 * The web scope: takes form bodies (url-encoded, or multipart for a form with a file), and refuses
 * at registration any route that changes something (POST, PUT, DELETE …) unless addFormRoute made
 * it, so no form post can go unguarded.
 */
export function guardWebScope(app: FastifyInstance): void {
  registerFormParser(app);
  registerMultipartParser(app);
  app.addHook('onRoute', (route) => {
    if (unsafeMethod(route.method) && !guardedHandlers.has(route.handler))
      throw new Error(`${String(route.method)} ${route.url}: a web form post must be added with addFormRoute (web/kit/forms.ts), which guards it`);
  });
}
