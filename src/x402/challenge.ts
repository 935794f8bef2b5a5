import type { PaymentRequired } from '@x402/core/types';
import { v2Requirements } from '../chain/authorization.ts';
import { MAX_TIMEOUT_SECONDS, type Network, SCHEME, USDC_DOMAIN, X402_VERSION } from '../common/network.ts';
import { challengeExtensions, type DiscoveryTerms } from './extensions.ts';
import { X402_ERRORS, type X402ErrorCode } from './protocol.ts';

export type Offer = {
  /** The chain the payment is asked on: the session's mode's. */
  network: Network;
  resourceUrl: string;
  description: string;
  payTo: string;
  asset: string;
  usdcAmount: bigint;
  /** Set when the session is a link its merchant made discoverable: the challenge then describes it (bazaar). */
  discovery?: DiscoveryTerms;
  /** What the USDC is the price of: the amount in the session currency (for an editable session, the buyer's). */
  price: { amount: number; currency: string };
};

/** One entry of `accepts` in the 402 body, exactly as spec E3 lists it. */
export function acceptsEntry(offer: Offer) {
  return {
    scheme: SCHEME,
    network: offer.network.v1,
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

export type Challenge = { body: Record<string, unknown>; headers: Record<string, string> };

/**
 * A 402: the spec body plus a PAYMENT-REQUIRED header so v2 clients pay too. A challenge with an
 * offer declares its x402 extensions (extensions.ts) in both, and its body also says what it is
 * the price of (`amount`, `currency`), so a page shows the amount and its USDC from one answer.
 */
export function challenge(error: X402ErrorCode, offer: Offer | undefined, extra: Record<string, unknown> = {}, message?: string): Challenge {
  const extensions = offer ? challengeExtensions(offer.discovery) : undefined;
  const body = {
    x402Version: X402_VERSION,
    error,
    message: message ?? X402_ERRORS[error],
    accepts: offer ? [acceptsEntry(offer)] : [],
    ...(offer ? offer.price : {}),
    ...(extensions ? { extensions } : {}),
    ...extra,
  };
  const headers: Record<string, string> = {};
  if (offer) {
    headers['payment-required'] = encodePaymentRequired({
      x402Version: X402_VERSION,
      error,
      resource: { url: offer.resourceUrl, description: offer.description, mimeType: 'application/json' },
      accepts: [v2Requirements(offer)],
      ...(extensions ? { extensions } : {}),
    });
  }
  return { body, headers };
}

/** The same string as @x402/core's encodePaymentRequiredHeader (base64 of the UTF-8 JSON), without its byte-by-byte detour through btoa. */
function encodePaymentRequired(value: PaymentRequired): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}
