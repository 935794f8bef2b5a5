import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { getAddress } from 'viem';
import { MAX_TIMEOUT_SECONDS, type Network, SCHEME, USDC_DOMAIN, X402_VERSION } from '../common/network.ts';

/** An EIP-3009 TransferWithAuthorization as signed: what moves, between whom, when, under which nonce. */
export type SignedAuthorization = {
  asset: string;
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
  signature: string;
};

/** The x402 v2 requirement of a USDC payment (CAIP-2 network, `amount`): what a challenge offers and a facilitator checks. */
export function v2Requirements(offer: { payTo: string; asset: string; usdcAmount: bigint; network: Network }) {
  return {
    scheme: SCHEME,
    network: offer.network.v2,
    asset: offer.asset,
    amount: offer.usdcAmount.toString(),
    payTo: offer.payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_DOMAIN } as Record<string, unknown>,
  };
}

/**
 * What a facilitator is handed to verify or settle a signed authorization, in x402 v2: the payload
 * and the requirements it meets, with the resource it pays for. One builder for a buyer's payment,
 * its re-submission after a reorganisation, and a merchant's refund.
 */
export function authorizationRequest(
  signed: SignedAuthorization,
  resource: { url: string; description: string },
  network: Network,
): { payload: PaymentPayload; requirements: PaymentRequirements } {
  const requirements = v2Requirements({ payTo: getAddress(signed.to), asset: getAddress(signed.asset), usdcAmount: signed.value, network });
  const payload: PaymentPayload = {
    x402Version: X402_VERSION,
    resource: { ...resource, mimeType: 'application/json' },
    accepted: requirements,
    payload: {
      signature: signed.signature,
      authorization: {
        from: getAddress(signed.from),
        to: getAddress(signed.to),
        value: signed.value.toString(),
        validAfter: signed.validAfter.toString(),
        validBefore: signed.validBefore.toString(),
        nonce: signed.nonce,
      },
    },
  };
  return { payload, requirements };
}
