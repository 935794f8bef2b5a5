import { HTTPFacilitatorClient } from '@x402/core/http';
import { type PaymentPayload, type PaymentRequirements, SettleError, type SettleResponse, VerifyError, type VerifyResponse } from '@x402/core/types';
import type { Histogram } from 'prom-client';

export type Facilitator = {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
};

const VERIFY_TIMEOUT_MS = 10_000;

/**
 * The facilitator over HTTP: the hosted one in production, `till sandbox` locally — one code path.
 * Every call is timed, so the latency Till adds on top can be told apart in /metrics.
 */
export function createFacilitator(options: {
  url: string;
  headers: Record<string, string>;
  callSeconds: Histogram<'operation' | 'outcome'>;
  settleTimeoutMs: number;
}): Facilitator {
  const auth = Object.keys(options.headers).length ? async () => ({ verify: options.headers, settle: options.headers, supported: options.headers }) : undefined;
  const verifyClient = new HTTPFacilitatorClient({ url: options.url, timeoutMs: VERIFY_TIMEOUT_MS, ...(auth ? { createAuthHeaders: auth } : {}) });
  const settleClient = new HTTPFacilitatorClient({ url: options.url, timeoutMs: options.settleTimeoutMs, ...(auth ? { createAuthHeaders: auth } : {}) });
  const timed = async <T>(operation: 'verify' | 'settle', call: () => Promise<T>): Promise<T> => {
    const stop = options.callSeconds.startTimer({ operation });
    try {
      const result = await call();
      stop({ outcome: 'answered' });
      return result;
    } catch (error) {
      stop({ outcome: 'error' });
      throw error;
    }
  };
  // A refusal the facilitator answered is a result; only a missing answer is an error (outcome unknown).
  return {
    verify: (payload, requirements) =>
      timed('verify', () =>
        verifyClient.verify(payload, requirements).catch((error: unknown) => {
          if (error instanceof VerifyError) return { isValid: false, invalidReason: error.invalidReason, invalidMessage: error.invalidMessage };
          throw error;
        }),
      ),
    settle: (payload, requirements) =>
      timed('settle', () =>
        settleClient.settle(payload, requirements).catch((error: unknown) => {
          if (error instanceof SettleError)
            return {
              success: false,
              errorReason: error.errorReason,
              errorMessage: error.errorMessage,
              transaction: error.transaction ?? '',
              network: requirements.network,
            };
          throw error;
        }),
      ),
  };
}
