import type { FastifyInstance } from 'fastify';
import { STYLESHEET, STYLESHEET_PATH } from './html.ts';

/** The one stylesheet of every page. */
export function registerStylesheet(app: FastifyInstance): void {
  app.get(STYLESHEET_PATH, async (_request, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(STYLESHEET));
}
