import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { buildOpenApi, type OpenApiDocument } from './openapi.ts';

const described = new WeakMap<object, OpenApiDocument>();

/**
 * The OpenAPI document of the routes documented on this app, built on first use: routes registered
 * in plugins are known only once the app is ready. The /docs page (web/docs/) renders it too.
 */
export function apiDescription(app: FastifyInstance, context: AppContext): OpenApiDocument {
  let openapi = described.get(app.routeDocs);
  if (!openapi) {
    openapi = buildOpenApi(context.config.baseUrl, app.routeDocs, app.webhookDocs);
    described.set(app.routeDocs, openapi);
  }
  return openapi;
}

/** `GET /openapi.json`: the reference of the routes documented on this app. */
export function registerApiReference(app: FastifyInstance, context: AppContext): void {
  app.get('/openapi.json', async () => apiDescription(app, context));
}
