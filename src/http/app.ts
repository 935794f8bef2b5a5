import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions, LogController } from 'fastify';
import { invalidField, TillError } from '../common/errors.ts';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { isDatabaseUnavailable } from '../db/index.ts';
import { registerApiReference } from './api-reference.route.ts';
import { sendError } from './errors.ts';
import { registerHealth } from './health.route.ts';
import { PAGE_CSP, prefersHtml, UNREACHABLE_PAGE } from './html.ts';
import { registerJsonParser } from './json.ts';
import { registerMetrics } from './metrics.route.ts';
import { decorateRouteDocs, type RouteRegistrar } from './routes.ts';
import { nulCharacterField } from './validation.ts';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** A client's X-Request-Id when it is a sane one, else a new UUID. */
function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Headers every answer carries (the HTML ones are added in onSend). */
const COMMON_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

/**
 * A fast lane answers a raw request before the framework routes it, or returns false to leave it to
 * the routes. It is for a hot answer already encoded (the x402 challenge from its cache): it must
 * send what its route would, through the `send` it is given, which adds the request id, the common headers, the
 * request log lines and the request metric exactly as the framework's hooks do.
 */
export type FastLane = (request: IncomingMessage, response: ServerResponse, send: RawSender) => boolean;
export type RawSender = (answer: { route: string; status: number; headers: Record<string, string>; body: Buffer }) => void;

declare module 'fastify' {
  interface FastifyInstance {
    addFastLane(lane: FastLane): void;
  }
}

/** Fastify's own refusals, mapped onto the one error shape. */
function frameworkError(error: FastifyError): TillError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TillError('body_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new TillError('unsupported_media_type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TillError('invalid_json', { problem: 'is empty; a JSON object was expected' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new TillError('invalid_request', { problem: 'Content-Length does not match the body' });
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return new TillError('invalid_request', { problem: error.message });
  return undefined;
}

/** A database that cannot be reached is a 503 with Retry-After: the request can be sent again. */
function unavailableDatabase(error: unknown): TillError | undefined {
  return isDatabaseUnavailable(error) ? new TillError('database_unreachable') : undefined;
}

function sendUnreachablePage(reply: FastifyReply, refusal: TillError) {
  reply.header('retry-after', String(refusal.retryAfterSeconds ?? 5));
  return reply.code(refusal.status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(UNREACHABLE_PAGE);
}

/** The payment API (E1, E2, the session read, webhook deliveries), the token endpoint and MCP: answered with `Cache-Control: no-store`. */
const NO_STORE_PATHS = /^\/(?:api\/|oauth\/token(?:[/?]|$)|mcp(?:[/?]|$))/;

/**
 * Fastify's `trustProxy` from TILL_TRUST_PROXY: none, the proxies' addresses, or a number of hops
 * (the nearest `hops` addresses of the chain are proxies; the one before them is the client).
 */
function trustedProxies(setting: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting;
}

/** The service's own pages and endpoints, beside the capabilities' routes. */
const OPERATIONAL_ROUTES: RouteRegistrar[] = [registerHealth, registerMetrics, registerApiReference];

export async function buildApp(context: AppContext, registrars: RouteRegistrar[]): Promise<FastifyInstance> {
  const lanes: FastLane[] = [];
  let closing = false;
  const logRequests = context.log.isLevelEnabled('info');
  const app = Fastify({
    loggerInstance: context.log as FastifyBaseLogger,
    // One line per request, written when it is answered (onResponse), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIdOf,
    trustProxy: trustedProxies(context.config.trustProxy),
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    serverFactory: (handler, options) =>
      laneServer(handler, options, (request, response) => {
        if (closing || lanes.length === 0) return false;
        const started = performance.now();
        const send: RawSender = ({ route, status, headers, body }) => {
          const id = requestIdOf(request);
          response.writeHead(status, { ...headers, ...COMMON_HEADERS, 'x-request-id': id, 'content-length': body.length }).end(body);
          const elapsed = performance.now() - started;
          context.metrics.httpRequestSeconds.observe({ method: request.method!, route, status: String(status) }, elapsed / 1000);
          if (logRequests) context.log.info(requestLine(id, request.method!, request.url!, status, elapsed), 'request completed');
        };
        for (const lane of lanes) if (lane(request, response, send)) return true;
        return false;
      }),
  });
  app.decorate('addFastLane', (lane: FastLane) => void lanes.push(lane));
  app.addHook('preClose', async () => {
    closing = true;
  });
  registerJsonParser(app);
  decorateRouteDocs(app);

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.headers(COMMON_HEADERS);
    done();
  });
  // A NUL character in any input is refused before a handler runs (see nulCharacterField).
  app.addHook('preValidation', (request, _reply, done) => {
    const field = request.routeOptions.url === undefined ? undefined : nulCharacterField(request); // no route: the 404 answers
    done(field === undefined ? undefined : invalidField(field || 'body', 'must not contain a NUL character (U+0000)'));
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    // RFC 6750 §3: a refused bearer token is answered with a Bearer challenge.
    if (reply.statusCode === 401 && /^bearer /i.test(request.headers.authorization ?? '') && !reply.hasHeader('www-authenticate'))
      reply.header('www-authenticate', 'Bearer error="invalid_token"');
    // Answers that may carry a secret (API keys, tokens) or payment data are kept by no cache.
    if (NO_STORE_PATHS.test(request.url) && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('text/html')) {
      // A route may set a policy of its own (a relayed page, the consent screen); the others get ours.
      if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', PAGE_CSP);
      reply.header('x-frame-options', 'DENY');
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (logRequests) context.log.info(requestLine(request.id, request.method, request.url, reply.statusCode, reply.elapsedTime), 'request completed');
    context.metrics.httpRequestSeconds.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const refusal = error instanceof TillError ? error : (frameworkError(error) ?? unavailableDatabase(error));
    if (refusal) {
      if (refusal.status >= 500) request.log.error({ err: error }, 'request failed');
      // A buyer or merchant on one of our pages gets a page, not the API's JSON.
      if (refusal.code === 'database_unreachable' && prefersHtml(request.headers.accept)) return sendUnreachablePage(reply, refusal);
      return sendError(reply, refusal);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, new TillError('internal_error'), { requestId: request.id });
  });
  app.setNotFoundHandler((request, reply) => {
    sendError(reply, new TillError('not_found', { what: `Route ${request.method} ${request.url.split('?')[0]}` }));
  });

  for (const register of [...OPERATIONAL_ROUTES, ...registrars]) register(app, context);
  return app;
}

/** The one log entry of a request, for the framework's routes and the fast lanes alike. */
const requestLine = (reqId: string, method: string, url: string, statusCode: number, responseTime: number) => ({
  reqId,
  req: { method, url },
  res: { statusCode },
  responseTime,
});

/** The HTTP server Fastify would make, with the fast lanes tried before its handler. */
function laneServer(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  options: Pick<FastifyServerOptions, 'keepAliveTimeout' | 'requestTimeout' | 'connectionTimeout' | 'maxRequestsPerSocket'>,
  lane: (request: IncomingMessage, response: ServerResponse) => boolean,
) {
  const server = createServer((request, response) => {
    if (!lane(request, response)) handler(request, response);
  });
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
  if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
  if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
  return server;
}
