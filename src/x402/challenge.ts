import type { PaymentRequired } from '@x402/core/types';
import { NETWORK_V1, NETWORK_V2, USDC_DOMAIN } from '../common/network.ts';
import { MAX_TIMEOUT_SECONDS, SCHEME, X402_ERRORS, X402_VERSION, type X402ErrorCode } from './protocol.ts';

/** The absolute URL a session is paid at: the challenge's `resource`, built from TILL_BASE_URL, never from the Host header. */
export function sessionResourceUrl(baseUrl: string, sessionId: string): string {
  return `${baseUrl}/x402/session/${encodeURIComponent(sessionId)}`;
}

export type Offer = {
  resourceUrl: string;
  description: string;
  payTo: string;
  asset: string;
  usdcAmount: bigint;
};

/** One entry of `accepts` in the 402 body, exactly as spec E3 lists it. */
export function acceptsEntry(offer: Offer) {
  return {
    scheme: SCHEME,
    network: NETWORK_V1,
    asset: offer.asset,
    payTo: offer.payTo,
    maxAmountRequired: offer.usdcAmount.toString(),
    resource: offer.resourceUrl,
    description: offer.description,
    mimeType: 'application/json',
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_DOMAIN },
  };
}

/** The same offer as an x402 v2 requirement (CAIP-2 network, `amount`). */
export function v2Requirements(offer: Pick<Offer, 'payTo' | 'asset' | 'usdcAmount'>) {
  return {
    scheme: SCHEME,
    network: NETWORK_V2 as `${string}:${string}`,
    asset: offer.asset,
    amount: offer.usdcAmount.toString(),
    payTo: offer.payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_DOMAIN } as Record<string, unknown>,
  };
}

export type Challenge = { body: Record<string, unknown>; headers: Record<string, string> };

/** A 402: the spec body plus a PAYMENT-REQUIRED header so v2 clients pay too. */
export function challenge(error: X402ErrorCode, offer: Offer | undefined, extra: Record<string, unknown> = {}, message?: string): Challenge {
  const body = { x402Version: X402_VERSION, error, message: message ?? X402_ERRORS[error], accepts: offer ? [acceptsEntry(offer)] : [], ...extra };
  const headers: Record<string, string> = {};
  if (offer) {
    headers['payment-required'] = encodePaymentRequired({
      x402Version: X402_VERSION,
      error,
      resource: { url: offer.resourceUrl, description: offer.description, mimeType: 'application/json' },
      accepts: [v2Requirements(offer)],
    });
  }
  return { body, headers };
}

/** The same string as @x402/core's encodePaymentRequiredHeader (base64 of the UTF-8 JSON), without its byte-by-byte detour through btoa. */
function encodePaymentRequired(value: PaymentRequired): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}
