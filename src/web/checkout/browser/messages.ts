import type { X402ErrorCode } from '../../../x402/protocol.ts';

/** What the buyer reads for each x402 `error` code (docs/x402.md), in plain words. */
export const X402_SENTENCES: Record<X402ErrorCode, string> = {
  payment_required: 'No payment was received. Please try again.',
  amount_required: 'Please choose an amount to pay.',
  amount_below_minimum: 'That amount is below the minimum for this payment.',
  invalid_payload: 'Your wallet sent a payment this page could not read. Please try again.',
  conflicting_payment_headers: 'Your wallet sent the payment twice in different forms. Please try again.',
  unsupported_scheme: 'Your wallet offered a kind of payment this shop does not accept.',
  wrong_network: 'The payment was made on another network. Pay with USDC on Base.',
  wrong_pay_to: "The payment was addressed to someone other than this shop's payout address. Nothing was charged.",
  wrong_asset: 'The payment was in another token. Pay with USDC on Base.',
  wrong_resource: 'The payment was made for another purchase. Please try again.',
  amount_mismatch: 'The price was updated. Check the new amount and pay again.',
  authorization_expired: 'The payment authorization ran out before it arrived. Please try again.',
  authorization_too_long: 'The payment authorization was valid for too long. Please try again.',
  authorization_not_yet_valid: "The payment authorization isn't valid yet; check your device's clock and try again.",
  invalid_signature: 'The signature did not match the payment. Please try again with the same wallet.',
  insufficient_funds: "Your wallet doesn't hold enough USDC on Base for this payment.",
  nonce_used: 'This payment authorization was already used. Please try again.',
  payment_in_progress: 'A payment is being confirmed…',
  session_changed: 'The shop changed this payment. Check the new details and pay again.',
  payment_failed: 'The payment did not go through. Nothing was charged; please try again.',
};

/** Codes after which the page asks for a fresh quote before the buyer tries again. */
export const REQUOTE_CODES: ReadonlySet<string> = new Set(['amount_mismatch', 'session_changed', 'authorization_expired']);
