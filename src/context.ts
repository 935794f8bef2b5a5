import type { Logger } from 'pino';
import type { WakeSignal } from './common/wake-signal.ts';
import type { Config } from './config.ts';
import type { DatabaseKind, Db } from './db/index.ts';
import type { Metrics } from './metrics.ts';
import type { RatesProvider } from './money/rates.ts';

/** Everything a route or worker needs, built once by the composition root. */
export type AppContext = {
  config: Config;
  db: Db;
  dbKind: DatabaseKind;
  metrics: Metrics;
  log: Logger;
  now: () => number;
  /** Exchange rates to USDC: which currencies a session may use, and at what rate it is quoted. */
  rates: RatesProvider;
  /** Notified after a commit that queued webhook deliveries; this app's delivery workers listen. */
  webhookWake: WakeSignal;
  /**
   * Crash tests only: called at named points of the money path (e.g. `x402:after-settle`) so a
   * test can kill the process exactly there. Never set in production.
   */
  faultHook?: (point: FaultPoint) => void | Promise<void>;
};

export type FaultPoint =
  | 'x402:after-claim'
  | 'x402:after-settle'
  /** An MCP tool has run (what it did is committed) and its answer is not yet sent. */
  | 'mcp:after-tool';
