import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { ApiKeyScope } from '../common/api-key-scopes.ts';
import type { AppContext } from '../context.ts';
import { jsonContentTypeProblem } from './json.ts';

/** What the OpenAPI document says about a route; kept beside the route's handler. */
export type RouteDoc = {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  /**
   * The operation's name in the OpenAPI document, which generated clients name their methods after:
   * verb and object in camelCase (createPaymentSession), never changed once published. Every API
   * route has one (test/openapi.test.ts); pages and form posts need none.
   */
  operationId?: string;
  summary: string;
  description?: string;
  tag: string;
  security?: 'apiKey' | 'none';
  /** What an `apiKey` route needs of a restricted key: one of its scopes (a full key has them all). */
  scope?: ApiKeyScope;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** A request body as a client sends it, shown in the OpenAPI document (and checked against `body` by its lint). */
  bodyExample?: unknown;
  responses: Record<number, { description: string; schema?: z.ZodType; example?: unknown }>;
};

/** An event the service sends to a merchant's endpoint: the OpenAPI document's `webhooks`. */
export type WebhookDoc = { name: string; operationId: string; summary: string; description: string; schema: z.ZodType };

/** Registers a group of routes on an app; buildApp calls one per capability. */
export type RouteRegistrar = (app: FastifyInstance, context: AppContext) => void;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope of a restricted API key the route needs (its doc's `scope`), read by the API key check. */
    apiKeyScope?: ApiKeyScope;
  }
  interface FastifyInstance {
    /** The docs of the routes added with addRoute to this app (and its plugins), for its own /openapi.json. */
    readonly routeDocs: RouteDoc[];
    /** The webhooks the app sends, for its /openapi.json. */
    readonly webhookDocs: WebhookDoc[];
  }
}

/** Gives a new app its own, empty list of route docs; plugins registered on it share the list. */
export function decorateRouteDocs(app: FastifyInstance): void {
  app.decorate('routeDocs', []);
  app.decorate('webhookDocs', []);
}

/** Remembers a webhook the app sends, for its /openapi.json. */
export function addWebhookDoc(app: FastifyInstance, doc: WebhookDoc): void {
  app.webhookDocs.push(doc);
}

/** A route that takes a body refuses a non-JSON one before anything else runs, even an empty one. */
function requireJsonBody(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  done(jsonContentTypeProblem(request.headers['content-type']));
}

/** Registers a route's handler and remembers its doc for the app's /openapi.json. */
export function addRoute(
  app: FastifyInstance,
  doc: RouteDoc,
  options: {
    bodyLimit?: number;
    /** Runs before the body is read: a reply sent here is the answer, and no body is parsed. */
    onRequest?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
    preHandler?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
    config?: FastifyContextConfig;
  },
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): void {
  if (doc.security === 'apiKey' && !doc.scope) throw new Error(`${doc.method} ${doc.url} takes an API key: its doc names the scope it needs`);
  const onRequest = [...(doc.body ? [requireJsonBody] : []), ...(options.onRequest ? [options.onRequest] : [])];
  const config = doc.scope ? { ...options.config, apiKeyScope: doc.scope } : options.config;
  app.route({
    ...(onRequest.length > 0 ? { onRequest } : {}),
    method: doc.method,
    url: doc.url.replace(/\{(\w+)\}/g, ':$1'),
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    ...(options.preHandler ? { preHandler: options.preHandler } : {}),
    ...(config ? { config } : {}),
    handler,
  });
  app.routeDocs.push(doc);
}
