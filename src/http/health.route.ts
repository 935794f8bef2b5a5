import type { FastifyInstance } from 'fastify';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { sendError } from './errors.ts';

/** `GET /healthz`: the process answers. `GET /readyz`: and so does the database. */
export function registerHealth(app: FastifyInstance, context: AppContext): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await context.db.selectFrom('merchants').select('id').limit(1).execute();
      return { status: 'ready' };
    } catch {
      return sendError(reply, new TillError('database_unreachable'), {}, { status: 'unavailable' });
    }
  });
}
