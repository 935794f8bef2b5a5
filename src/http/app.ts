import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { invalidField, TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { registerApiReference } from './api-reference.route.ts';
import { sendError } from './errors.ts';
import { registerHealth } from './health.route.ts';
import { PAGE_CSP } from './html.ts';
import { registerJsonParser } from './json.ts';
import { registerLanding } from './landing.route.ts';
import { registerMetrics } from './metrics.route.ts';
import { decorateRouteDocs, type RouteRegistrar } from './routes.ts';
import { registerStylesheet } from './stylesheet.route.ts';
import { nulCharacterField } from './validation.ts';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

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

/** The service's own pages and endpoints, beside the capabilities' routes. */
const OPERATIONAL_ROUTES: RouteRegistrar[] = [registerLanding, registerHealth, registerMetrics, registerStylesheet, registerApiReference];

export async function buildApp(context: AppContext, registrars: RouteRegistrar[]): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: context.log as FastifyBaseLogger,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    trustProxy: context.config.trustProxy,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
  });
  registerJsonParser(app);
  decorateRouteDocs(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  // A NUL character in any input is refused before a handler runs (see nulCharacterField).
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.url === undefined) return; // no route: the 404 answers
    const field = nulCharacterField(request);
    if (field !== undefined) throw invalidField(field || 'body', 'must not contain a NUL character (U+0000)');
  });
  app.addHook('onSend', async (request, reply, payload) => {
    // RFC 6750 §3: a refused bearer token is answered with a Bearer challenge.
    if (reply.statusCode === 401 && /^bearer /i.test(request.headers.authorization ?? '') && !reply.hasHeader('www-authenticate'))
      reply.header('www-authenticate', 'Bearer error="invalid_token"');
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('text/html')) {
      // A route may set a policy of its own (a relayed page, the consent screen); the others get ours.
      if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', PAGE_CSP);
      reply.header('x-frame-options', 'DENY');
    }
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    context.metrics.httpRequestSeconds.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const refusal = error instanceof TillError ? error : frameworkError(error);
    if (refusal) {
      if (refusal.status >= 500) request.log.error({ err: error }, 'request failed');
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
