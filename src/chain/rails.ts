import type { Mode } from '../common/modes.ts';
import type { Network } from '../common/network.ts';
import { type Config, walletRpcUrlOf } from '../config.ts';
import type { Metrics } from '../metrics.ts';
import { createFacilitator, type Facilitator } from './facilitator.ts';
import { type ChainReader, createChainReader } from './reader.ts';

/**
 * What one mode's money moves on: its facilitator, its chain's reader (none without an RPC), its
 * token, its explorer and how many confirmations make a block final. Test mode's are the sandbox's,
 * live mode's Base's; a session, payment or refund is always handled on the rails of its own mode.
 */
export type Rails = {
  mode: Mode;
  facilitator: Facilitator;
  chain: ChainReader | undefined;
  usdcAddress: string;
  explorerTxUrl: string;
  confirmations: bigint;
  /** The chain, as challenges, signatures and wallets name it. */
  network: Network;
  /** The JSON-RPC a browser wallet is asked to add for it: the sandbox's own through this service, or the network's public one. */
  walletRpcUrl: string;
};

export type RailsByMode = Partial<Record<Mode, Rails>>;

/** The rails of every served mode that has a facilitator and a token, built once for the pay flow, refunds and the reconciler. */
export function createRails(config: Config, metrics: Pick<Metrics, 'facilitatorCallSeconds'>): RailsByMode {
  const rails: RailsByMode = {};
  for (const mode of config.modes) {
    const chain = config.chains[mode];
    if (!chain?.facilitatorUrl || !chain.usdcAddress) continue;
    rails[mode] = {
      mode,
      facilitator: createFacilitator({
        url: chain.facilitatorUrl,
        auth: chain.facilitator,
        headers: chain.facilitatorHeaders,
        callSeconds: metrics.facilitatorCallSeconds,
        settleTimeoutMs: config.facilitatorSettleTimeoutMs,
      }),
      chain: chain.rpcUrl ? createChainReader(chain.rpcUrl, chain.network) : undefined,
      usdcAddress: chain.usdcAddress,
      explorerTxUrl: chain.explorerTxUrl,
      confirmations: BigInt(chain.finalityConfirmations),
      network: chain.network,
      walletRpcUrl: walletRpcUrlOf(config, mode),
    };
  }
  return rails;
}

/** The rails of the modes that have any, in a stable order. */
export const railsList = (rails: RailsByMode): Rails[] => (['live', 'sandbox'] as const).flatMap((mode) => (rails[mode] ? [rails[mode]] : []));
