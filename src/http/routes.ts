import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import { jsonContentTypeProblem } from './json.ts';

/** What the OpenAPI document says about a route; kept beside the route's handler. */
export type RouteDoc = {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  description?: string;
  tag: string;
  security?: 'apiKey' | 'none';
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
};

export type RouteModule = {
  doc: RouteDoc;
  register(app: FastifyInstance, context: AppContext): void;
};

const documented: RouteDoc[] = [];

/** A route that takes a body refuses a non-JSON one before anything else runs, even an empty one. */
async function requireJsonBody(request: FastifyRequest): Promise<void> {
  const problem = jsonContentTypeProblem(request.headers['content-type']);
  if (problem) throw problem;
}

/** Registers a route's handler and remembers its doc for /openapi.json. */
export function addRoute(
  app: FastifyInstance,
  doc: RouteDoc,
  options: { bodyLimit?: number; preHandler?: (request: FastifyRequest, reply: FastifyReply) => Promise<void> },
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): void {
  if (!documented.some((d) => d.method === doc.method && d.url === doc.url)) documented.push(doc);
  app.route({
    ...(doc.body ? { onRequest: requireJsonBody } : {}),
    method: doc.method,
    url: doc.url.replace(/\{(\w+)\}/g, ':$1'),
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    ...(options.preHandler ? { preHandler: options.preHandler } : {}),
    handler,
  });
}

export function documentedRoutes(): readonly RouteDoc[] {
  return documented;
}
