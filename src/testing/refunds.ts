// Refunds as a merchant's server makes them over the payment API: a paid order to refund, and the
// payout wallet's signature of the typed data `POST …/refunds/prepare` answers.
import assert from 'node:assert/strict';
import { getAddress, type Hex, type LocalAccount } from 'viem';
import type { PayingService } from './harness.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment } from './shop.ts';

/** The typed data prepare answers (addresses and numbers as the JSON carries them). */
export type RefundTypedData = {
  domain: { name: string; version: string; chainId: number; verifyingContract: string };
  types: Record<string, { name: string; type: string }[]>;
  primaryType: 'TransferWithAuthorization';
  message: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
};

/** Signs refund typed data as viem does for a local account: EIP712Domain left out, the numbers as bigint. */
export function signRefund(signer: LocalAccount, typed: RefundTypedData) {
  const { EIP712Domain: _, ...types } = typed.types;
  const m = typed.message;
  return signer.signTypedData({
    domain: { ...typed.domain, verifyingContract: getAddress(typed.domain.verifyingContract) },
    types,
    primaryType: typed.primaryType,
    message: { ...m, value: BigInt(m.value), validAfter: BigInt(m.validAfter), validBefore: BigInt(m.validBefore), nonce: m.nonce as Hex },
  });
}

/** A 1 USD session of the merchant (`apiKey`) paid over x402 by a new buyer: the order id (TX-…), the session and the buyer. */
export async function paidOrder(env: Pick<PayingService, 'baseUrl' | 'sandbox'>, apiKey: string) {
  const sessionId = await createSession(env.baseUrl, apiKey, { amount: 1, currency: 'USD', orderId: `api-refund-${Math.random()}` });
  const payer = await fundedPayer(env.sandbox, '2');
  const offer = await challenge(env.baseUrl, sessionId);
  const response = await pay(env.baseUrl, sessionId, (await signedPayment(payer, env.sandbox.usdcAddress, offer)).header);
  const answer = (await response.json()) as { paymentId: string };
  assert.equal(response.status, 200, JSON.stringify(answer));
  return { sessionId, paymentId: answer.paymentId, payer };
}
