import type { FastifyInstance } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Counter } from 'prom-client';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { RatesProvider } from '../money/rates.ts';
import { createFacilitator, type Facilitator } from './facilitator.ts';
import { registerPaySession } from './pay-session.route.ts';

export type X402Services = {
  facilitator: Facilitator;
  rates: RatesProvider;
  usdcAddress: string;
  /** Throws 429 when a client or a session sends too many proofs. */
  limitProofs(ip: string, sessionId: string): Promise<void>;
  /** Counts a quote about to be stored for the session; 429 past TILL_X402_QUOTES_PER_MINUTE_PER_SESSION. */
  limitNewQuotes(sessionId: string): Promise<void>;
  metrics: { proofsRefused: Counter<'reason'>; paymentsSettled: Counter };
};

export function createX402Services(context: AppContext): X402Services | undefined {
  const { config } = context;
  if (!config.facilitatorUrl || !config.usdcAddress) return undefined;
  const perIp = new RateLimiterMemory({ points: config.x402ProofsPerMinutePerIp, duration: 60 });
  const perSession = new RateLimiterMemory({ points: config.x402ProofsPerMinutePerSession, duration: 60 });
  const quotesPerSession = new RateLimiterMemory({ points: config.x402QuotesPerMinutePerSession, duration: 60 });
  const consume = async (limiter: RateLimiterMemory, key: string, what: string) => {
    // `what` completes "Too many … ", e.g. "payment proofs from this client".
    try {
      await limiter.consume(key);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      throw new TillError('rate_limited', { what, retryAfterSeconds: Math.ceil(error.msBeforeNext / 1000) });
    }
  };
  return {
    facilitator: createFacilitator({ url: config.facilitatorUrl, headers: config.facilitatorHeaders, callSeconds: context.metrics.facilitatorCallSeconds }),
    rates: context.rates,
    usdcAddress: config.usdcAddress,
    limitProofs: async (ip, sessionId) => {
      await consume(perIp, ip, 'payment proofs from this client');
      await consume(perSession, sessionId, 'payment proofs for this session');
    },
    limitNewQuotes: (sessionId) => consume(quotesPerSession, sessionId, 'new quotes for this session'),
    metrics: { proofsRefused: context.metrics.x402ProofsRefused, paymentsSettled: context.metrics.x402PaymentsSettled },
  };
}

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
    app.register(async (scope) => {
      scope.addHook('onRequest', async (_request, reply) => {
        reply.headers(CORS_HEADERS);
      });
      for (const path of ['/x402/session/:sessionId', '/checkout/v2/x402/session/:sessionId']) scope.options(path, async (_request, reply) => reply.code(204).send());
      registerPaySession(scope, context, services);
    });
  };
}
