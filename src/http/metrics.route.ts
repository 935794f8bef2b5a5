import type { FastifyInstance } from 'fastify';
import { constantTimeEqual } from '../common/secrets.ts';
import type { AppContext } from '../context.ts';

/**
 * `GET /metrics`: this service instance's Prometheus registry. With TILL_METRICS_TOKEN set, only
 * for `Authorization: Bearer <token>`; unset, open in the sandbox and closed in live mode (its
 * counters tell volumes, merchants' activity and failures to whoever asks).
 */
export function registerMetrics(app: FastifyInstance, context: AppContext): void {
  const { metricsToken, mode } = context.config;
  app.get('/metrics', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    if (metricsToken === undefined && mode === 'live')
      return reply
        .code(403)
        .type('text/plain; charset=utf-8')
        .send('/metrics is closed in live mode until TILL_METRICS_TOKEN is set; then scrape it with that bearer token.\n');
    if (metricsToken !== undefined) {
      const presented = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
      if (!presented || !constantTimeEqual(presented, metricsToken))
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="metrics"')
          .type('text/plain; charset=utf-8')
          .send('/metrics needs Authorization: Bearer with the TILL_METRICS_TOKEN of this service.\n');
    }
    reply.type(context.metrics.registry.contentType);
    return context.metrics.registry.metrics();
  });
}
