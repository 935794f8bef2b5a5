import { getAddress, recoverTypedDataAddress } from 'viem';
import { TRANSFER_WITH_AUTHORIZATION, USDC_DOMAIN } from '../common/network.ts';
import type { Proof } from './payload.ts';

/**
 * Who signed a proof, as far as this machine can tell without the chain:
 * - `payer`: its 65-byte signature recovers to `authorization.from` under the token's EIP-712 domain;
 * - `stranger`: it recovers to another address, or to none: whoever sent it, its payer did not sign it;
 * - `wallet`: it is longer than 65 bytes, a smart wallet's (ERC-1271, ERC-6492), which only the chain
 *   can check (the facilitator does).
 */
export type ProofSigner = 'payer' | 'stranger' | 'wallet';

/** An ECDSA signature is r, s and v: 65 bytes. */
const ECDSA_HEX_LENGTH = 2 + 65 * 2;

/** Recovers the proof's signer locally (no RPC, no facilitator), for the token at `asset` on the offer's chain. */
export async function proofSigner(proof: Proof, asset: string, chainId: number): Promise<ProofSigner> {
  if (proof.signature.length > ECDSA_HEX_LENGTH) return 'wallet';
  try {
    const recovered = await recoverTypedDataAddress({
      domain: { ...USDC_DOMAIN, chainId, verifyingContract: getAddress(asset) },
      types: TRANSFER_WITH_AUTHORIZATION,
      primaryType: 'TransferWithAuthorization',
      message: { from: proof.from, to: proof.to, value: proof.value, validAfter: proof.validAfter, validBefore: proof.validBefore, nonce: proof.nonce },
      signature: proof.signature,
    });
    return recovered.toLowerCase() === proof.from.toLowerCase() ? 'payer' : 'stranger';
  } catch {
    // Not a signature at all (a v that is neither 27 nor 28, r or s off the curve …).
    return 'stranger';
  }
}
