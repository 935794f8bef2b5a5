import { setTimeout as sleep } from 'node:timers/promises';
import { authorizationRequest } from '../chain/authorization.ts';
import {
  type Facilitator,
  FacilitatorError,
  type FacilitatorProblem,
  type ProblemSubject,
  reportFacilitatorProblem,
  type VerifyVerdict,
} from '../chain/facilitator.ts';
import { authorizationOf, nextFailedCheck } from '../chain/follow-up.ts';
import type { Rails } from '../chain/rails.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { type ClaimTerms, findPaymentByAuthorization, type PaymentRow, recordFailure, recordSettleAttempt, recordSettlement } from '../payments/payments.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import type { Offer } from './challenge.ts';
import type { Proof } from './payload.ts';
import type { Quote } from './quotes.ts';

/** The facilitator is handed the proof's authorization with the terms of our stored quote it was checked against, in v2. */
export function facilitatorRequest(proof: Proof, quote: Quote, offer: Pick<Offer, 'resourceUrl' | 'description' | 'network'>) {
  return authorizationRequest(
    { ...proof, asset: quote.asset, to: quote.pay_to, value: quote.usdc_amount },
    { url: offer.resourceUrl, description: offer.description },
    offer.network,
  );
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
    payment_identifier: proof.paymentIdentifier ?? null,
  };
}

/** The refusal a buyer gets for a facilitator problem: definite for a refused request, Retry-After otherwise (the facilitator's own on a 429). */
export function facilitatorRefusal(problem: FacilitatorProblem): TillError {
  if (problem.kind === 'refused') return new TillError('facilitator_refused');
  if (problem.kind === 'rate_limited') return new TillError('facilitator_unavailable', { busy: true, retryAfterSeconds: problem.retryAfterSeconds ?? 10 });
  return new TillError('facilitator_unavailable');
}

/** The facilitator's verdict on a proof; no verdict is a 503 (or a 502 for a refused request) with nothing charged. */
export async function verifyWithFacilitator(
  context: Pick<AppContext, 'metrics'>,
  log: Pick<AppContext['log'], 'warn' | 'error'>,
  facilitator: Facilitator,
  request: ReturnType<typeof facilitatorRequest>,
  subject: ProblemSubject,
): Promise<VerifyVerdict> {
  try {
    return await facilitator.verify(request.payload, request.requirements);
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    reportFacilitatorProblem(context, log, error.problem, subject);
    throw facilitatorRefusal(error.problem);
  }
}

export type SettleResult =
  | { kind: 'settled'; payment: PaymentRow }
  /** The facilitator said nothing was submitted and the chain agrees: the payment is FAILED, its session payable again. */
  | { kind: 'refused'; reason: string; problem: FacilitatorProblem | undefined }
  | { kind: 'unsettled'; reason: string; txHash: string | undefined };

/**
 * Settles a claimed payment outside any transaction. A definite success (`success: true` with a
 * transaction) is recorded here; so is a definite refusal (nothing submitted), once the chain shows
 * the authorization unused: the payment is FAILED and looked at again later like every failure.
 * Anything else — "pending", an error, even one carrying a hash, a timeout, a lost answer — leaves
 * the payment PENDING for the reconciler, which resolves it from the chain alone; a hash the
 * facilitator named is kept for it to follow.
 */
export async function settleClaimed(
  context: Pick<AppContext, 'db' | 'webhookWake' | 'now' | 'config' | 'faultHook' | 'log' | 'metrics'>,
  services: Pick<Rails, 'facilitator' | 'chain' | 'explorerTxUrl' | 'network'>,
  claimed: PaymentRow,
  request: ReturnType<typeof facilitatorRequest>,
): Promise<SettleResult> {
  const { db } = context;
  await context.faultHook?.('x402:after-claim');
  const outcome = await services.facilitator.settle(request.payload, request.requirements);
  if (outcome.kind !== 'settled' && outcome.problem)
    reportFacilitatorProblem(context, context.log, outcome.problem, { sessionId: claimed.session_id, paymentId: claimed.id });
  if (outcome.kind === 'refused' && (await endRefusedClaim(context, services, claimed, outcome.reason)))
    return { kind: 'refused', reason: outcome.reason, problem: outcome.problem };
  if (outcome.kind !== 'settled') {
    const txHash = outcome.kind === 'unsure' ? outcome.transaction : undefined;
    await followUpAtOnce(context, claimed.id, txHash);
    return { kind: 'unsettled', reason: outcome.reason, txHash };
  }
  const txHash = outcome.transaction;
  await context.faultHook?.('x402:after-settle');
  const recorded = await recordSettlement(context, claimed, {
    txHash,
    blockNumber: null,
    settleResponse: JSON.stringify(outcome.response),
    now: context.now(),
    explorerTxUrl: services.explorerTxUrl,
    network: services.network.v1,
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
 * The facilitator said it submitted nothing: when the chain's head shows the authorization unused,
 * the payment is FAILED now (its session payable again) instead of held until validBefore. Its
 * looks after failing (reconciler.ts) still find a transfer made later with the same authorization.
 * Without a chain to ask, or when it cannot be read, the reconciler decides as for any other answer.
 */
async function endRefusedClaim(
  context: Pick<AppContext, 'db' | 'webhookWake' | 'now' | 'config' | 'log'>,
  { chain, explorerTxUrl, network }: Pick<Rails, 'chain' | 'explorerTxUrl' | 'network'>,
  claimed: PaymentRow,
  reason: string,
): Promise<boolean> {
  if (!chain) return false;
  try {
    const head = await chain.head();
    if (await chain.authorizationState(authorizationOf(claimed), head)) return false;
  } catch (error) {
    context.log.warn({ err: error, paymentId: claimed.id }, 'could not read the chain after a settle refusal; the reconciler decides');
    return false;
  }
  const now = context.now();
  const failed = await recordFailure(context, claimed, reason, {
    now,
    explorerTxUrl,
    network: network.v1,
    recheckAt: nextFailedCheck(now, context.config.reconcileIntervalMs, now),
  });
  return failed !== undefined;
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

/**
 * A duplicate of a payment being settled (the same proof, or another one naming the same payment
 * identifier) waits for the first (up to `timeoutMs`) and gets its outcome; `find` reads it again.
 */
export async function waitForOutcome(find: () => Promise<PaymentRow | undefined>, timeoutMs: number): Promise<PaymentRow | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const payment = await find();
    if (payment?.status !== 'PENDING' || Date.now() >= deadline) return payment;
    await sleep(100);
  }
}
