import { encodePaymentResponseHeader } from '@x402/core/http';
import { getAddress } from 'viem';
import type { Rails } from '../chain/rails.ts';
import { explorerUrl, type PaymentRow } from '../payments/payments.ts';
import { challenge, type Offer } from './challenge.ts';
import type { X402ErrorCode } from './protocol.ts';

/**
 * What the x402 endpoint answers: a status, its headers and a JSON body. `reusable` marks a
 * challenge that is the same bytes for every request until `until` unless its session or merchant
 * changes (x402/challenge-cache.ts).
 */
export type Answer = {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  reusable?: { merchantId: string; until: number };
};

/** Retry-After of an answer that asks the client to come back once a payment in progress is resolved. */
export const RETRY_AFTER_S = '5';

/** The 200 of spec E3 for a settled payment, the same every time it is asked for. */
export function paidAnswer(payment: PaymentRow, rails: Pick<Rails, 'explorerTxUrl' | 'network'>): Answer {
  const txHash = payment.tx_hash ?? '';
  const settle = (network: string) =>
    encodePaymentResponseHeader({ success: true, transaction: txHash, network: network as `${string}:${string}`, payer: getAddress(payment.payer) });
  return {
    status: 200,
    body: {
      status: 'SUCCESS',
      paymentSessionId: payment.session_id,
      payTo: getAddress(payment.pay_to),
      receipt: explorerUrl(rails.explorerTxUrl, txHash),
      paymentId: payment.public_order_id,
    },
    headers: { 'x-payment-response': settle(rails.network.v1), 'payment-response': settle(rails.network.v2) },
  };
}

/** A 402: the challenge (with the offer when there is one) naming why no payment was taken. */
export function challengeAnswer(
  error: X402ErrorCode,
  offer: Offer | undefined,
  options: { extra?: Record<string, unknown>; message?: string; headers?: Record<string, string> } = {},
): Answer {
  const c = challenge(error, offer, options.extra, options.message);
  return { status: 402, headers: { ...c.headers, ...options.headers }, body: c.body };
}

/**
 * A payment is being settled or confirmed: come back after Retry-After. No offer: whoever is waiting
 * for a payment in flight must not be asked to sign another.
 */
export function inProgressAnswer(): Answer {
  return challengeAnswer('payment_in_progress', undefined, { headers: { 'retry-after': RETRY_AFTER_S } });
}
