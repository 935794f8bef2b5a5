/** A quote behind a challenge stays payable this long (longer than maxTimeoutSeconds, for slow wallets). */
export const QUOTE_TTL_MS = 90_000;
/**
 * The smallest payment the hosted facilitator settles, in USDC base units ($0.001): Coinbase's
 * answers a smaller amount with 400 invalid_payload. Every quote is held to it, in the sandbox too.
 */
export const FACILITATOR_MIN_AMOUNT = 1000n;
/** The longest description the hosted facilitator takes (its API's `Description`, maxLength 500). */
export const MAX_DESCRIPTION_LENGTH = 500;

/** Local bounds on an authorization's validity window, in seconds from now. */
export const MIN_VALIDITY_LEFT_S = 10;
export const MAX_VALIDITY_S = 600;

/**
 * The documented 402 `error` codes (docs/x402.md). Every 402 carries one.
 */
export const X402_ERRORS = {
  payment_required: 'No payment was sent; pay the challenge and retry with X-PAYMENT or PAYMENT-SIGNATURE',
  amount_required: 'This session has a buyer-chosen amount: send ?amount= on both requests',
  amount_below_minimum: 'The amount is below the session minimum',
  invalid_payload: 'The payment header is not a valid base64 x402 payment payload',
  conflicting_payment_headers: 'Send either X-PAYMENT or PAYMENT-SIGNATURE, not both',
  unsupported_scheme: 'Only the exact scheme on base (eip155:8453) is accepted',
  wrong_network: 'Only USDC on base (eip155:8453) is accepted',
  wrong_pay_to: 'The authorization pays another address than the challenge',
  wrong_asset: 'The payment is in another token than the challenge',
  wrong_resource: 'The payment was made for another resource than this session',
  amount_mismatch: 'The authorized value matches no current quote of this session; pay the new challenge',
  authorization_expired: 'The authorization is expired or expires too soon (validBefore must be at least 10 s ahead)',
  authorization_too_long: 'The authorization is valid for too long (validBefore must be at most 600 s ahead)',
  authorization_not_yet_valid: 'The authorization is not valid yet (validAfter is in the future)',
  invalid_signature: 'The signature does not match the authorization',
  insufficient_funds: "The payer's USDC balance is below the amount",
  nonce_used: 'This authorization nonce has already been used',
  payment_in_progress: 'A payment of this session is being settled; retry after Retry-After seconds',
  session_changed: 'The session changed after the challenge was issued; pay the new challenge',
  payment_failed: 'The facilitator refused the payment',
} as const;

export type X402ErrorCode = keyof typeof X402_ERRORS;
