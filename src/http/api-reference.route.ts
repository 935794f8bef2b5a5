import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { renderApiReference } from './docs-page.ts';
import { buildOpenApi, type OpenApiDocument } from './openapi.ts';

/** `GET /openapi.json` and `GET /docs`: the reference of the routes documented on this app. */
export function registerApiReference(app: FastifyInstance, context: AppContext): void {
  // Built on first use: routes registered in plugins are known only once the app is ready.
  let documents: { openapi: OpenApiDocument; reference: string } | undefined;
  const docs = () => {
    if (!documents) {
      const openapi = buildOpenApi(context.config.baseUrl, app.routeDocs);
      documents = { openapi, reference: renderApiReference(openapi) };
    }
    return documents;
  };
  app.get('/openapi.json', async () => docs().openapi);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(docs().reference));
}
