import type { PaymentRow } from '../payments/payments.ts';
import type { Authorization } from './reader.ts';

// When a payment the chain must decide is looked at again, shared by the reconciler and the settle
// that ends a refused claim at once.

/** A PENDING payment is looked at again after interval × 2^checks, at most this long apart… */
const MAX_BACKOFF_MS = 60_000;
/** …and, once past its validBefore, at most this long apart (or one interval, if longer). */
const AFTER_EXPIRY_MS = 5_000;
/** A FAILED payment is looked at again this many reconcile intervals after it failed (1 min, 10 min, 1 h by default). */
const FAILED_RECHECKS = [12, 120, 720];

/** The EIP-3009 authorization a payment was claimed with. */
export function authorizationOf(payment: PaymentRow): Authorization {
  return { asset: payment.asset, payer: payment.payer, payTo: payment.pay_to, value: payment.value, nonce: payment.nonce };
}

/**
 * When to look at a PENDING payment again: backing off while its authorization may still be used,
 * but never later than one interval after validBefore; from then on, at most AFTER_EXPIRY_MS apart,
 * so it is decided soon after the pinned block passes validBefore.
 */
export function nextPendingCheck(payment: PaymentRow, intervalMs: number, now: number): number {
  const backoff = Math.min(intervalMs * 2 ** Math.min(payment.checks, 10), MAX_BACKOFF_MS);
  const expiresAt = Number(payment.valid_before) * 1000;
  if (now < expiresAt) return Math.min(now + backoff, expiresAt + intervalMs);
  return now + Math.min(backoff, Math.max(intervalMs, AFTER_EXPIRY_MS));
}

/** The next look at a FAILED payment, or null once the last one is done. */
export function nextFailedCheck(failedAt: number, intervalMs: number, now: number): number | null {
  return FAILED_RECHECKS.map((n) => failedAt + n * intervalMs).find((at) => at > now) ?? null;
}
