import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { apiDescription } from '../../http/api-reference.route.ts';
import { renderApiReference } from './page.ts';

/** `GET /docs`: the API reference as a page, rendered once from the app's OpenAPI document. */
export function registerDocsPage(app: FastifyInstance, context: AppContext): void {
  let reference: string | undefined;
  app.get('/docs', async (_request, reply) => {
    reference ??= String(renderApiReference(apiDescription(app, context)));
    return reply.type('text/html; charset=utf-8').send(reference);
  });
}
