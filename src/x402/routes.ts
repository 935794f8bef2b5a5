import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { createChallengeCache } from './challenge-cache.ts';
import { CORS_HEADERS } from './cors.ts';
import { registerDiscoveryManifest } from './discovery.route.ts';
import { challengeLane, registerPaySession } from './pay-session.route.ts';
import type { X402Services } from './services.ts';

/** x402 routes are public and called from browsers too, so CORS allows them and exposes the x402 headers. */
export function registerX402Routes(services: X402Services | undefined) {
  return (app: FastifyInstance, context: AppContext) => {
    if (!services) return;
    const challenges = createChallengeCache(context);
    app.addHook('onClose', () => challenges.close());
    app.addFastLane(challengeLane(context, challenges));
    registerDiscoveryManifest(app, context);
    app.register(async (scope) => {
      scope.addHook('onRequest', (_request, reply, done) => {
        reply.headers(CORS_HEADERS);
        done();
      });
      for (const path of ['/x402/session/:sessionId', '/checkout/v2/x402/session/:sessionId'])
        scope.options(path, async (_request, reply) => reply.code(204).send());
      registerPaySession(scope, context, services, challenges);
    });
  };
}
