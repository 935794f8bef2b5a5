import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';

/** `GET /metrics`: this service instance's Prometheus registry. */
export function registerMetrics(app: FastifyInstance, context: AppContext): void {
  app.get('/metrics', async (_request, reply) => {
    reply.type(context.metrics.registry.contentType);
    return context.metrics.registry.metrics();
  });
}
