import { z } from 'zod';

/**
 * Sandbox fault controls, for crash and recovery tests only. They change how the sandbox
 * facilitator answers `/settle`, never what it does on chain.
 */
export type SandboxFaults = {
  /** The next settle is carried out on chain, then its connection is closed without an answer (one shot). */
  dropNextSettleResponse: boolean;
  /** Every settle answer is held back this long after the settlement transaction is mined. */
  delaySettleMs: number;
};

export type SandboxFacilitatorStats = {
  verifyRequests: number;
  settleRequests: number;
  /** Hashes of the settlements the facilitator mined successfully, in order. */
  settledTransactions: string[];
  droppedSettleResponses: number;
};

export const sandboxFaultsUpdateSchema = z
  .object({
    dropNextSettleResponse: z.boolean(),
    delaySettleMs: z.number().int().min(0).max(600_000),
  })
  .partial()
  .strict();

export type SandboxFaultsUpdate = z.infer<typeof sandboxFaultsUpdateSchema>;

export function createFaultState() {
  const faults: SandboxFaults = { dropNextSettleResponse: false, delaySettleMs: 0 };
  const stats: SandboxFacilitatorStats = {
    verifyRequests: 0,
    settleRequests: 0,
    settledTransactions: [],
    droppedSettleResponses: 0,
  };
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
    snapshot() {
      return { faults: { ...faults }, stats: { ...stats, settledTransactions: [...stats.settledTransactions] } };
    },
  };
}

export type FaultState = ReturnType<typeof createFaultState>;
