import type { Counter } from 'prom-client';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { RatesProvider } from '../money/rates.ts';
import { createFacilitator, type Facilitator } from './facilitator.ts';

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

/** What the pay flow runs with: the app's context and the x402 services (facilitator, limits, rates). */
export type PayFlow = { context: AppContext; services: X402Services };
