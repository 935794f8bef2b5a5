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
  /** Throws 429 when a client sends too many proofs; checked first and alone, so a refused one counts nowhere else. */
  limitClientProofs(ip: string): Promise<void>;
  /** Counts a proof against its session once its signer is known: its payer's budget, or a smart wallet's per client; 429 past it. */
  limitSignedProofs(sessionId: string, signedBy: { payer: string } | { client: string }): Promise<void>;
  /** Counts a proof of the session about to reach the facilitator; 429 past TILL_X402_PROOFS_PER_MINUTE_PER_SESSION. */
  limitVerifications(sessionId: string): Promise<void>;
  /** Counts a quote about to be stored for the session: the client's budget, then the session's backstop; 429 past either. */
  limitNewQuotes(sessionId: string, ip: string): Promise<void>;
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
  const perPayer = minute('x402_proofs_payer', config.x402ProofsPerMinutePerPayer, 'payment proofs from this payer for this session');
  const perWalletClient = minute(
    'x402_proofs_wallet_client',
    config.x402ProofsPerMinutePerPayer,
    'smart-wallet payment proofs from this client for this session',
  );
  const verificationsPerSession = minute('x402_proofs_session', config.x402ProofsPerMinutePerSession, 'payment proofs for this session');
  const quotesPerClient = minute('x402_quotes_client', config.x402QuotesPerMinutePerClient, 'new quotes for this session from this client');
  const quotesPerSession = minute('x402_quotes_session', config.x402QuotesPerMinutePerSession, 'new quotes for this session');
  // One limit at a time: a request refused by one is counted by no later one.
  const hit = (limit: Limit, subject: string) => consume(context.db, [{ limit, subject }], context.now());
  return {
    facilitator: rails.facilitator,
    chain: rails.chain,
    rates: context.rates,
    usdcAddress: config.usdcAddress,
    limitClientProofs: (ip) => hit(perIp, ip),
    limitSignedProofs: (sessionId, signedBy) =>
      'payer' in signedBy ? hit(perPayer, `${sessionId} ${signedBy.payer}`) : hit(perWalletClient, `${sessionId} ${signedBy.client}`),
    limitVerifications: (sessionId) => hit(verificationsPerSession, sessionId),
    limitNewQuotes: async (sessionId, ip) => {
      await hit(quotesPerClient, `${sessionId} ${ip}`);
      await hit(quotesPerSession, sessionId);
    },
    metrics: { proofsRefused: context.metrics.x402ProofsRefused, paymentsSettled: context.metrics.x402PaymentsSettled },
  };
}

/** What the pay flow runs with: the app's context and the x402 services (facilitator, limits, rates). */
export type PayFlow = { context: AppContext; services: X402Services };
