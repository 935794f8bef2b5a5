import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { createChallengeCache } from './challenge-cache.ts';
import { registerPaySession } from './pay-session.route.ts';
import type { X402Services } from './services.ts';

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'X-PAYMENT, PAYMENT-SIGNATURE, Content-Type, Access-Control-Expose-Headers',
  'access-control-expose-headers': 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, Retry-After',
  'access-control-max-age': '600',
};

/** x402 routes are public and called from browsers too, so CORS allows them and exposes the x402 headers. */
export function registerX402Routes(services: X402Services | undefined) {
  return (app: FastifyInstance, context: AppContext) => {
    if (!services) return;
    const challenges = createChallengeCache(context);
    app.addHook('onClose', () => challenges.close());
    app.register(async (scope) => {
      scope.addHook('onRequest', async (_request, reply) => {
        reply.headers(CORS_HEADERS);
      });
      for (const path of ['/x402/session/:sessionId', '/checkout/v2/x402/session/:sessionId'])
        scope.options(path, async (_request, reply) => reply.code(204).send());
      registerPaySession(scope, context, services, challenges);
    });
  };
}
