import type { Counter } from 'prom-client';
import { type Rails, type RailsByMode, railsList } from '../chain/rails.ts';
import { TillError } from '../common/errors.ts';
import type { Mode } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import { consume, type Limit } from '../limits/limits.ts';
import type { RatesProvider } from '../money/rates.ts';

export type X402Services = {
  /** Each served mode's facilitator, chain reader and token; a session is paid on its own mode's. */
  rails: RailsByMode;
  rates: RatesProvider;
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

/** The pay flow's services around the rails main.ts built; none when no mode has a facilitator and a token. */
export function createX402Services(context: AppContext, rails: RailsByMode): X402Services | undefined {
  const { config } = context;
  if (railsList(rails).length === 0) return undefined;
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
    rails,
    rates: context.rates,
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

/** What the pay flow starts with: the app's context and the x402 services (limits, rates, every mode's rails). */
export type PayerFlow = { context: AppContext; services: X402Services };

/** What the pay flow runs with once the session is found: the rails of the session's mode too. */
export type PayFlow = PayerFlow & { rails: Rails };

/**
 * Each served mode's token, as findSessionToQuote takes them: a mode without rails (no facilitator
 * or token configured) is found too, with a token no quote names, so its sessions are said to be
 * unpayable for now rather than unknown.
 */
export const quotableAssets = (modes: readonly Mode[], services: Pick<X402Services, 'rails'> | undefined): Partial<Record<Mode, string>> =>
  Object.fromEntries(modes.map((mode) => [mode, services?.rails[mode]?.usdcAddress ?? NO_TOKEN]));
const NO_TOKEN = '-';

/** The flow for a session found by findSessionToQuote, on the rails of its mode; 503 while that mode has none. */
export function flowFor(payer: PayerFlow, mode: Mode): PayFlow {
  const rails = payer.services.rails[mode];
  if (!rails) throw new TillError('facilitator_unavailable');
  return { ...payer, rails };
}
