import { setTimeout as sleep } from 'node:timers/promises';
import type { PaymentPayload } from '@x402/core/types';
import { getAddress } from 'viem';
import { TillError } from '../common/errors.ts';
import { NETWORK_V2 } from '../common/network.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { type ClaimTerms, findPaymentByAuthorization, type PaymentRow, recordSettleAttempt, recordSettlement } from '../payments/payments.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { v2Requirements } from './challenge.ts';
import type { Facilitator } from './facilitator.ts';
import type { Proof } from './payload.ts';
import { X402_VERSION } from './protocol.ts';
import type { Quote } from './quotes.ts';

/** The facilitator is handed the payload and requirements rebuilt from our stored quote, in v2. */
export function facilitatorRequest(proof: Proof, quote: Quote, resource: { url: string; description: string }) {
  const requirements = v2Requirements({ payTo: getAddress(quote.pay_to), asset: getAddress(quote.asset), usdcAmount: quote.usdc_amount });
  const payload: PaymentPayload = {
    x402Version: X402_VERSION,
    resource: { ...resource, mimeType: 'application/json' },
    accepted: requirements,
    payload: {
      signature: proof.signature,
      authorization: {
        from: getAddress(proof.from),
        to: getAddress(proof.to),
        value: proof.value.toString(),
        validAfter: proof.validAfter.toString(),
        validBefore: proof.validBefore.toString(),
        nonce: proof.nonce,
      },
    },
  };
  return { payload, requirements };
}

/** Rebuilds the stored proof of a payment, for the reconciler's re-submission. */
export function proofOf(payment: PaymentRow): Proof {
  return {
    scheme: 'exact',
    network: NETWORK_V2,
    asset: payment.asset,
    resource: undefined,
    signature: payment.signature as `0x${string}`,
    from: payment.payer as `0x${string}`,
    to: payment.pay_to as `0x${string}`,
    value: payment.value,
    validAfter: payment.valid_after,
    validBefore: payment.valid_before,
    nonce: payment.nonce as `0x${string}`,
  };
}

/** What a claim records of a proof checked against the quote it pays. */
export function claimTerms(proof: Proof, quote: Quote, session: SessionRow): ClaimTerms {
  return {
    session,
    quotedVersion: quote.session_version,
    quote_id: quote.id,
    payer: proof.from,
    pay_to: quote.pay_to.toLowerCase(),
    asset: quote.asset.toLowerCase(),
    value: proof.value,
    nonce: proof.nonce,
    valid_after: proof.validAfter,
    valid_before: proof.validBefore,
    signature: proof.signature,
    amount_minor: quote.amount_minor,
    currency: quote.currency,
    rate: quote.rate,
  };
}

/** The facilitator's verdict on a proof; a facilitator that does not answer is a 503 with nothing charged. */
export async function verifyWithFacilitator(
  facilitator: Facilitator,
  request: ReturnType<typeof facilitatorRequest>,
): Promise<{ isValid: boolean; invalidReason?: string | undefined }> {
  try {
    return await facilitator.verify(request.payload, request.requirements);
  } catch {
    throw new TillError('facilitator_unavailable');
  }
}

export type SettleOutcome = { kind: 'settled'; payment: PaymentRow } | { kind: 'unsettled'; reason: string; txHash: string | undefined };

/**
 * Settles a claimed payment outside any transaction. Only a definite success (`success: true` with a
 * transaction) is recorded here. Anything else — "pending", an error, even one carrying a hash, a
 * timeout, a lost answer — leaves the payment PENDING for the reconciler, which resolves it from the
 * chain alone; a hash the facilitator named is kept for it to follow.
 */
export async function settleClaimed(
  context: Pick<AppContext, 'db' | 'webhookWake' | 'now' | 'config' | 'faultHook' | 'log' | 'metrics'>,
  facilitator: Facilitator,
  claimed: PaymentRow,
  request: ReturnType<typeof facilitatorRequest>,
): Promise<SettleOutcome> {
  const { db } = context;
  await context.faultHook?.('x402:after-claim');
  let response: Awaited<ReturnType<Facilitator['settle']>>;
  try {
    response = await facilitator.settle(request.payload, request.requirements);
  } catch (error) {
    await followUpAtOnce(context, claimed.id, undefined);
    return { kind: 'unsettled', reason: error instanceof Error && error.name === 'TimeoutError' ? 'settle_timeout' : 'settle_unanswered', txHash: undefined };
  }
  const txHash = response.transaction || undefined;
  if (!response.success || !txHash) {
    await followUpAtOnce(context, claimed.id, txHash);
    return { kind: 'unsettled', reason: response.errorReason ?? 'settlement_failed', txHash };
  }
  await context.faultHook?.('x402:after-settle');
  const recorded = await recordSettlement(context, claimed, {
    txHash,
    blockNumber: null,
    settleResponse: JSON.stringify(response),
    now: context.now(),
    explorerTxUrl: context.config.explorerTxUrl,
  });
  if (recorded) return { kind: 'settled', payment: recorded };
  // Not recorded here: the reconciler got there first; the payment's own row says how it ended.
  const settled = await findPaymentByAuthorization(db, claimed.payer, claimed.nonce);
  if (settled?.status === 'SUCCESS') return { kind: 'settled', payment: settled };
  if (settled?.status === 'FAILED') {
    // A success for a payment the chain was read to have failed: never dropped in silence.
    context.metrics.x402LateSettlements.inc();
    context.log.error({ paymentId: claimed.id, txHash }, 'the facilitator settled a payment already recorded FAILED; the reconciler checks its transaction');
    await followUpAtOnce(context, claimed.id, txHash);
  }
  return { kind: 'unsettled', reason: 'settled_after_failure', txHash };
}

/**
 * Asks the reconciler to look at once, keeping the hash the facilitator named. Failing to write it
 * changes no answer: the payment is looked at after the grace all the same.
 */
async function followUpAtOnce(context: Pick<AppContext, 'db' | 'now' | 'log'>, paymentId: string, txHash: string | undefined): Promise<void> {
  try {
    await recordSettleAttempt(context.db, paymentId, txHash, context.now());
  } catch (error) {
    context.log.warn({ err: error, paymentId, txHash }, 'could not record the settle attempt; the reconciler looks after the grace');
  }
}

/** A duplicate of a proof being settled waits for the first (up to `timeoutMs`) and gets its outcome. */
export async function waitForOutcome(db: Db, payer: string, nonce: string, timeoutMs: number): Promise<PaymentRow | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const payment = await findPaymentByAuthorization(db, payer, nonce);
    if (payment?.status !== 'PENDING' || Date.now() >= deadline) return payment;
    await sleep(100);
  }
}
