import type { SessionRow } from '../sessions/sessions.ts';
import type { Offer } from './challenge.ts';
import { isOfferedNetwork, isOurScheme, type Proof } from './payload.ts';
import { MAX_VALIDITY_S, MIN_VALIDITY_LEFT_S, type X402ErrorCode } from './protocol.ts';
import type { Quote } from './quotes.ts';

type Checked = { proof: Proof; quote: Quote | undefined; offer: Offer; session: SessionRow; nowSeconds: bigint };

/**
 * The checks a proof passes before any facilitator call, against the offer and the session's own
 * stored quote: one refusal each, in this order. The first that fails names the 402's `error`.
 */
const LOCAL_CHECKS: ReadonlyArray<[X402ErrorCode, (c: Checked) => boolean]> = [
  ['unsupported_scheme', ({ proof }) => isOurScheme(proof.scheme)],
  ['wrong_network', ({ proof, offer }) => isOfferedNetwork(proof.network, offer.network)],
  // 65 bytes or more (a smart wallet's may be longer): a shorter one cannot be an ECDSA signature.
  ['invalid_signature', ({ proof }) => /^0x(?:[0-9a-fA-F]{2}){65,}$/.test(proof.signature)],
  ['wrong_pay_to', ({ proof, offer }) => proof.to === offer.payTo.toLowerCase()],
  ['wrong_asset', ({ proof, offer }) => proof.asset === undefined || proof.asset.toLowerCase() === offer.asset.toLowerCase()],
  ['wrong_resource', ({ proof, offer }) => proof.resource === undefined || proof.resource === offer.resourceUrl],
  ['amount_mismatch', ({ quote }) => quote !== undefined],
  ['session_changed', ({ quote, session }) => quote!.session_version === session.version],
  ['wrong_pay_to', ({ quote, proof }) => quote!.pay_to.toLowerCase() === proof.to],
  ['authorization_expired', ({ proof, nowSeconds }) => proof.validBefore >= nowSeconds + BigInt(MIN_VALIDITY_LEFT_S)],
  ['authorization_too_long', ({ proof, nowSeconds }) => proof.validBefore <= nowSeconds + BigInt(MAX_VALIDITY_S)],
  ['authorization_not_yet_valid', ({ proof, nowSeconds }) => proof.validAfter <= nowSeconds],
];

export function localCheck(checked: Checked): X402ErrorCode | undefined {
  return LOCAL_CHECKS.find(([, passes]) => !passes(checked))?.[0];
}

/** The documented 402 code for a facilitator's refusal reason. */
export function facilitatorErrorCode(reason: string | undefined): X402ErrorCode {
  if (!reason) return 'payment_failed';
  if (reason.includes('signature')) return 'invalid_signature';
  if (reason.includes('insufficient')) return 'insufficient_funds';
  if (reason.includes('nonce')) return 'nonce_used';
  if (reason.includes('recipient')) return 'wrong_pay_to';
  if (reason.includes('valid_before') || reason.includes('expired')) return 'authorization_expired';
  if (reason.includes('valid_after')) return 'authorization_not_yet_valid';
  if (reason.includes('value')) return 'amount_mismatch';
  return 'payment_failed';
}
