// EIP-3009 authorizations and x402 proofs, signed and encoded as buyers' clients do it.
import { randomBytes } from 'node:crypto';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import type { Address, Hex, LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TRANSFER_WITH_AUTHORIZATION } from '../common/network.ts';

/** An EIP-3009 TransferWithAuthorization, as the buyer signs it. */
export type Authorization = { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };

export const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
export const randomNonce = (): Hex => `0x${randomBytes(32).toString('hex')}`;

/** A new account with a random key and nothing on it. */
export const newAccount = () => privateKeyToAccount(generatePrivateKey());

/** An authorization for `from` paying `value` to `to`, valid from now for 60 s unless overridden. */
export function authorization(from: Address, to: Address, value: bigint, overrides: Partial<Authorization> = {}): Authorization {
  return { from, to, value, validAfter: nowSeconds() - 5n, validBefore: nowSeconds() + 60n, nonce: randomNonce(), ...overrides };
}

/** Signs with the EIP-712 domain of USDC on Base (which the sandbox token copies), or on the chain named. */
export function signAuthorization(signer: LocalAccount, usdcAddress: Address, message: Authorization, chainId = 8453): Promise<Hex> {
  return signer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId, verifyingContract: usdcAddress },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: 'TransferWithAuthorization',
    message,
  });
}

/** The `payload` of an exact-scheme proof, values as decimal strings. */
export function exactPayload(signature: Hex, auth: Authorization) {
  return {
    signature,
    authorization: {
      from: auth.from,
      to: auth.to,
      value: auth.value.toString(),
      validAfter: auth.validAfter.toString(),
      validBefore: auth.validBefore.toString(),
      nonce: auth.nonce,
    },
  };
}

/** What a seller asks for in the exact scheme on Base (v2): `amount` base units of `asset` paid to `payTo`. */
export function exactRequirements(asset: Address, payTo: Address, amount: bigint): PaymentRequirements {
  return { scheme: 'exact', network: 'eip155:8453', asset, amount: amount.toString(), payTo, maxTimeoutSeconds: 60, extra: { name: 'USD Coin', version: '2' } };
}

/** A v2 payment payload for `requirements`, as an x402 client hands it to a facilitator. */
export function paymentPayload(
  requirements: PaymentRequirements,
  signature: Hex,
  auth: Authorization,
  resource: { url: string; description: string },
): PaymentPayload {
  return { x402Version: 2, resource: { ...resource, mimeType: 'application/json' }, accepted: requirements, payload: exactPayload(signature, auth) };
}

export const base64Json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

/** X-PAYMENT as `x402-fetch` sends it (v1 shape); scheme and network can be overridden to test refusals. */
export function xPaymentHeader(signature: Hex, auth: Authorization, envelope: { scheme?: string; network?: string } = {}): string {
  return base64Json({ x402Version: 1, scheme: envelope.scheme ?? 'exact', network: envelope.network ?? 'base', payload: exactPayload(signature, auth) });
}

/** PAYMENT-SIGNATURE as `@x402/fetch` sends it (v2, with the accepted requirement echoed). */
export function paymentSignatureHeader(signature: Hex, auth: Authorization, asset: Address, resourceUrl?: string): string {
  return base64Json({
    x402Version: 2,
    ...(resourceUrl ? { resource: { url: resourceUrl, description: 'x', mimeType: 'application/json' } } : {}),
    accepted: exactRequirements(asset, auth.to, auth.value),
    payload: exactPayload(signature, auth),
  });
}

/** Signs an authorization of `value` from `payer` to `payTo` and returns it with its X-PAYMENT header. */
export async function signedXPayment(payer: LocalAccount, usdcAddress: Address, payTo: Address, value: bigint, overrides: Partial<Authorization> = {}) {
  const auth = authorization(payer.address, payTo, value, overrides);
  const signature = await signAuthorization(payer, usdcAddress, auth);
  return { auth, signature, header: xPaymentHeader(signature, auth) };
}
