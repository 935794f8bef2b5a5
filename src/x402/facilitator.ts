import { createAuthHeader, createCorrelationHeader } from '@coinbase/x402';
import { type FacilitatorConfig, HTTPFacilitatorClient } from '@x402/core/http';
import {
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  type SupportedResponse,
  VerifyError,
  type VerifyResponse,
} from '@x402/core/types';
import type { Histogram } from 'prom-client';
import type { Config } from '../config.ts';

export type Facilitator = {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  /** The payment kinds it settles (`GET /supported`), asked at a live start and by `till doctor`. */
  supported(): Promise<SupportedResponse>;
};

const VERIFY_TIMEOUT_MS = 10_000;

type AuthHeaders = NonNullable<FacilitatorConfig['createAuthHeaders']>;

/**
 * The headers each facilitator call carries. Coinbase's hosted facilitator takes a JWT signed per
 * request with the CDP API key, naming the request's method, host and path: made by
 * `@coinbase/x402`'s own `createAuthHeader`, for the configured URL (Coinbase's unless overridden).
 */
export function facilitatorAuthHeaders(url: string, auth: Config['facilitator'], staticHeaders: Record<string, string>): AuthHeaders | undefined {
  if (auth.kind === 'url') {
    if (Object.keys(staticHeaders).length === 0) return undefined;
    return async () => ({ verify: staticHeaders, settle: staticHeaders, supported: staticHeaders });
  }
  const { host, pathname } = new URL(url);
  const base = pathname.replace(/\/+$/, '');
  const signed = async (method: 'GET' | 'POST', path: string) => ({
    ...staticHeaders,
    Authorization: await createAuthHeader(auth.apiKeyId, auth.apiKeySecret, method, host, `${base}/${path}`),
    'Correlation-Context': createCorrelationHeader(),
  });
  return async () => {
    const [verify, settle, supported] = await Promise.all([signed('POST', 'verify'), signed('POST', 'settle'), signed('GET', 'supported')]);
    return { verify, settle, supported };
  };
}

/**
 * The facilitator over HTTP: the hosted one in production, `till sandbox` locally — one code path.
 * Every call is timed, so the latency Till adds on top can be told apart in /metrics.
 */
export function createFacilitator(options: {
  url: string;
  auth?: Config['facilitator'];
  headers: Record<string, string>;
  callSeconds?: Histogram<'operation' | 'outcome'>;
  settleTimeoutMs: number;
}): Facilitator {
  const auth = facilitatorAuthHeaders(options.url, options.auth ?? { kind: 'url' }, options.headers);
  const verifyClient = new HTTPFacilitatorClient({ url: options.url, timeoutMs: VERIFY_TIMEOUT_MS, ...(auth ? { createAuthHeaders: auth } : {}) });
  const settleClient = new HTTPFacilitatorClient({ url: options.url, timeoutMs: options.settleTimeoutMs, ...(auth ? { createAuthHeaders: auth } : {}) });
  const timed = async <T>(operation: 'verify' | 'settle', call: () => Promise<T>): Promise<T> => {
    const stop = options.callSeconds?.startTimer({ operation });
    try {
      const result = await call();
      stop?.({ outcome: 'answered' });
      return result;
    } catch (error) {
      stop?.({ outcome: 'error' });
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
    supported: () => verifyClient.getSupported(),
  };
}
