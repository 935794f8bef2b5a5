import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { TillError } from '../common/errors.ts';
import { errorBody, sendError } from './errors.ts';
import { registerJsonParser } from './json.ts';
import { buildOpenApi } from './openapi.ts';
import { renderApiReference } from './docs-page.ts';
import { registerLanding } from './landing.route.ts';
import { PAGE_CSP, STYLESHEET, STYLESHEET_PATH } from './html.ts';

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

export type RouteRegistrar = (app: FastifyInstance, context: AppContext) => void;

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

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('text/html')) {
      reply.header('content-security-policy', PAGE_CSP);
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

  registerLanding(app, context);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await context.db.selectFrom('merchants').select('id').limit(1).execute();
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable', ...errorBody(new TillError('database_unreachable')) });
    }
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(context.metrics.registry.contentType);
    return context.metrics.registry.metrics();
  });
  app.get(STYLESHEET_PATH, async (_request, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(STYLESHEET));

  for (const register of registrars) register(app, context);

  // Built on first use: routes registered in plugins are known only once the app is ready.
  let documents: { openapi: ReturnType<typeof buildOpenApi>; reference: string } | undefined;
  const docs = () => {
    if (!documents) {
      const openapi = buildOpenApi(context.config.baseUrl);
      documents = { openapi, reference: renderApiReference(openapi) };
    }
    return documents;
  };
  app.get('/openapi.json', async () => docs().openapi);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(docs().reference));
  return app;
}
