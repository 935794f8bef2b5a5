import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { addRoute } from '../http/routes.ts';

/** The merchant's authorized coding agents moved to the dashboard's Developers page; old links still work. */
export function registerCodingAgentsRoutes(app: FastifyInstance, _context: AppContext): void {
  addRoute(
    app,
    {
      method: 'GET',
      url: '/account/coding-agents',
      summary: 'Moved: the authorized coding agents are on the dashboard’s Developers page',
      tag: 'OAuth',
      security: 'none',
      responses: { 301: { description: 'On to /dashboard/developers' } },
    },
    {},
    async (_request, reply) => reply.redirect('/dashboard/developers', 301),
  );
}
