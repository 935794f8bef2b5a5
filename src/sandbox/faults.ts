import { z } from 'zod';

/**
 * How the sandbox facilitator answers `/settle`, to produce what hosted facilitators do on a bad day:
 * - `pending`: settles on chain, then answers 200 `{success: false, errorReason: "settlement_pending", transaction}`;
 * - `hang`: settles on chain, then never answers (the connection stays open until the caller gives up);
 * - `error`: settles on chain, then answers 500 `{success: false, errorReason: "unexpected_settle_error", transaction}`;
 * - `bad_gateway`: settles on chain, then answers 502 with a plain-text body (no hash);
 * - `refuse`: does not settle, and answers 200 `{success: false, errorReason: "transaction_failed"}` without a hash;
 * - `unavailable`: does not settle, and answers 503 with a plain-text body (a gateway in front of a facilitator that is down);
 * - `wrong_hash`: settles on chain, then answers success with the hash of another transaction (the last faucet mint).
 */
export const SETTLE_FAULTS = ['none', 'pending', 'hang', 'error', 'bad_gateway', 'refuse', 'unavailable', 'wrong_hash'] as const;
export type SettleFault = (typeof SETTLE_FAULTS)[number];

/**
 * Sandbox fault controls, for tests and for a person trying how Till behaves. They change how the
 * sandbox facilitator answers `/settle` and how its RPC sees the chain, never what is on chain.
 */
export type SandboxFaults = {
  /** The next settle is carried out on chain, then its connection is closed without an answer (one shot). */
  dropNextSettleResponse: boolean;
  /** Every settle answer is held back this long after the settlement transaction is mined. */
  delaySettleMs: number;
  /** Every verify answer is held back this long (the facilitator's verdict is unchanged). */
  delayVerifyMs: number;
  /** How every settle is answered from now on (`none`: as the facilitator answers). */
  settleFault: SettleFault;
  /**
   * `/rpc` behind a load balancer with one node this many blocks behind the head: every other RPC
   * request is answered by that node (`latest` is its head, later blocks and their receipts and logs
   * do not exist yet). 0: one node at the head.
   */
  rpcLagBlocks: number;
};

export type SandboxFacilitatorStats = {
  verifyRequests: number;
  settleRequests: number;
  /** Hashes of the settlements the facilitator mined successfully, in order. */
  settledTransactions: string[];
  droppedSettleResponses: number;
  /** The last faucet mint's transaction: what `wrong_hash` answers instead of the settlement's. */
  lastMintTransaction: string | undefined;
};

export const sandboxFaultsUpdateSchema = z
  .object({
    dropNextSettleResponse: z.boolean(),
    delaySettleMs: z.number().int().min(0).max(600_000),
    delayVerifyMs: z.number().int().min(0).max(600_000),
    settleFault: z.enum(SETTLE_FAULTS),
    rpcLagBlocks: z.number().int().min(0).max(100_000),
  })
  .partial()
  .strict();

export type SandboxFaultsUpdate = z.infer<typeof sandboxFaultsUpdateSchema>;

export function createFaultState() {
  const faults: SandboxFaults = { dropNextSettleResponse: false, delaySettleMs: 0, delayVerifyMs: 0, settleFault: 'none', rpcLagBlocks: 0 };
  const stats: SandboxFacilitatorStats = {
    verifyRequests: 0,
    settleRequests: 0,
    settledTransactions: [],
    droppedSettleResponses: 0,
    lastMintTransaction: undefined,
  };
  let rpcRequests = 0;
  return {
    faults,
    stats,
    update(update: SandboxFaultsUpdate): SandboxFaults {
      Object.assign(faults, update);
      return { ...faults };
    },
    /** Consumes the one-shot drop, if armed. */
    takeDropSettleResponse(): boolean {
      const armed = faults.dropNextSettleResponse;
      faults.dropNextSettleResponse = false;
      if (armed) stats.droppedSettleResponses += 1;
      return armed;
    },
    /** How many blocks behind the head the node answering this RPC request is. */
    nextRpcLag(): number {
      if (faults.rpcLagBlocks === 0) return 0;
      rpcRequests += 1;
      return rpcRequests % 2 === 0 ? faults.rpcLagBlocks : 0;
    },
    snapshot() {
      return { faults: { ...faults }, stats: { ...stats, settledTransactions: [...stats.settledTransactions] } };
    },
  };
}

export type FaultState = ReturnType<typeof createFaultState>;
