import type { Counter } from 'prom-client';
import type { Facilitator } from '../chain/facilitator.ts';
import type { ChainReader } from '../chain/reader.ts';
import type { AppContext } from '../context.ts';
import { consume, type Limit } from '../limits/limits.ts';
import type { RatesProvider } from '../money/rates.ts';

export type X402Services = {
  facilitator: Facilitator;
  /** The Base RPC, read once a settle is refused (and by the reconciler and refunds); none without TILL_BASE_RPC_URL. */
  chain: ChainReader | undefined;
  rates: RatesProvider;
  usdcAddress: string;
  /** Throws 429 when a client or a session sends too many proofs. */
  limitProofs(ip: string, sessionId: string): Promise<void>;
  /** Counts a quote about to be stored for the session; 429 past TILL_X402_QUOTES_PER_MINUTE_PER_SESSION. */
  limitNewQuotes(sessionId: string): Promise<void>;
  metrics: { proofsRefused: Counter<'reason'>; paymentsSettled: Counter };
};

/** The pay flow's services around the facilitator and chain reader main.ts built; none without a facilitator or a token. */
export function createX402Services(
  context: AppContext,
  rails: { facilitator: Facilitator | undefined; chain: ChainReader | undefined },
): X402Services | undefined {
  const { config } = context;
  if (!rails.facilitator || !config.usdcAddress) return undefined;
  // Counted in the database, so every instance on it shares one count (docs/decisions.md).
  const minute = (name: string, points: number, what: string): Limit => ({ name, points, windowMs: 60_000, what });
  const perIp = minute('x402_proofs_ip', config.x402ProofsPerMinutePerIp, 'payment proofs from this client');
  const perSession = minute('x402_proofs_session', config.x402ProofsPerMinutePerSession, 'payment proofs for this session');
  const quotesPerSession = minute('x402_quotes_session', config.x402QuotesPerMinutePerSession, 'new quotes for this session');
  return {
    facilitator: rails.facilitator,
    chain: rails.chain,
    rates: context.rates,
    usdcAddress: config.usdcAddress,
    limitProofs: (ip, sessionId) =>
      consume(
        context.db,
        [
          { limit: perIp, subject: ip },
          { limit: perSession, subject: sessionId },
        ],
        context.now(),
      ),
    limitNewQuotes: (sessionId) => consume(context.db, [{ limit: quotesPerSession, subject: sessionId }], context.now()),
    metrics: { proofsRefused: context.metrics.x402ProofsRefused, paymentsSettled: context.metrics.x402PaymentsSettled },
  };
}

/** What the pay flow runs with: the app's context and the x402 services (facilitator, limits, rates). */
export type PayFlow = { context: AppContext; services: X402Services };
