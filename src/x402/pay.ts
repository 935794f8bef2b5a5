import type { FastifyBaseLogger } from 'fastify';
import { TillError } from '../common/errors.ts';
import { MAX_TIMEOUT_SECONDS } from '../common/network.ts';
import {
  type ClaimResult,
  claimPayment,
  findPaymentByAuthorization,
  findPaymentByIdentifier,
  firstSuccessfulPayment,
  type PaymentRow,
} from '../payments/payments.ts';
import { isExpired, type SessionRow } from '../sessions/sessions.ts';
import { type Answer, challengeAnswer, inProgressAnswer, paidAnswer } from './answers.ts';
import { recordRefusedProof } from './attempts.ts';
import type { Offer } from './challenge.ts';
import { facilitatorErrorCode, localCheck } from './checks.ts';
import { PAYMENT_IDENTIFIER_FIELD } from './extensions.ts';
import { decodeProof, type Proof } from './payload.ts';
import { chosenAmount, payeeOf, quoteOffer } from './pricing.ts';
import { X402_ERRORS, type X402ErrorCode } from './protocol.ts';
import { findQuoteForValue, findSessionToQuote, type Quote } from './quotes.ts';
import { flowFor, type PayerFlow, type PayFlow, quotableAssets } from './services.ts';
import { claimTerms, facilitatorRefusal, facilitatorRequest, settleClaimed, verifyWithFacilitator, waitForOutcome } from './settlement.ts';
import { type ProofSigner, proofSigner } from './signer.ts';

/** One request to E3, as read from HTTP. */
export type PayRequest = {
  sessionId: string;
  amount: string | undefined;
  xPayment: string | undefined;
  paymentSignature: string | undefined;
  ip: string;
  log: FastifyBaseLogger;
};

/** A proof against one session's offer: everything the steps after decoding need, and who signed it (signer.ts). */
type Attempt = {
  flow: PayFlow;
  request: PayRequest;
  session: SessionRow;
  offer: Offer;
  quote: Quote;
  amountMinor: bigint;
  proof: Proof;
  now: number;
  signer: ProofSigner;
};

const DUPLICATE_WAIT_MS = 10_000;

/**
 * E3, as steps: find the session → answer a settled one → the payee → the amount → a quote and its
 * offer → decode the proof (or challenge) → limit → pay with the proof. Each step refuses in one way.
 */
export async function answerPayRequest(payer: PayerFlow, request: PayRequest): Promise<Answer> {
  const now = payer.context.now();
  const found = await findPayableSession(payer, request.sessionId, now);
  const { session } = found;
  const flow = flowFor(payer, session.mode);
  const settled = await settledAnswer(flow, session);
  if (settled) return settled;
  const payTo = payeeOf(session);
  const amount = chosenAmount(session, request.amount);
  if ('answer' in amount) return amount.answer;
  const quoted = await quoteOffer(flow, found, amount.minor, payTo, now, request.ip);
  if ('answer' in quoted) return quoted.answer;
  const { quote, offer } = quoted;

  const decoded = decodeProof({ xPayment: request.xPayment, paymentSignature: request.paymentSignature });
  if (!decoded) return { ...challengeAnswer('payment_required', offer), reusable: { merchantId: session.merchant_id, until: reusableUntil(session, quote) } };
  if (!decoded.ok) return refuseProof(flow, offer, decoded.error, decoded.message);
  const signer = await limitProof(flow, request, session, offer, decoded.proof);
  return payWithProof({ flow, request, session, offer, quote, amountMinor: amount.minor, proof: decoded.proof, now, signer });
}

/**
 * The client's limit first and alone (what it refuses counts nowhere else), then who signed the
 * proof, recovered locally; only a signature its payer made counts against the session, in that
 * payer's budget (a smart wallet's, which only the chain can check, in its client's).
 */
async function limitProof(flow: PayFlow, request: PayRequest, session: SessionRow, offer: Offer, proof: Proof): Promise<ProofSigner> {
  await flow.services.limitClientProofs(request.ip);
  const signer = await proofSigner(proof, offer.asset, offer.network.chainId);
  if (signer === 'payer') await flow.services.limitSignedProofs(session.id, { payer: proof.from });
  if (signer === 'wallet') await flow.services.limitSignedProofs(session.id, { client: request.ip });
  return signer;
}

/**
 * Until when the same challenge is right, changes aside: while its quote is still the one a new
 * challenge would reuse (so never past the quote's validity) and the session is unexpired.
 */
function reusableUntil(session: SessionRow, quote: Quote): number {
  const lastReuse = quote.expires_at - MAX_TIMEOUT_SECONDS * 1000;
  return session.expires_at === null ? lastReuse : Math.min(lastReuse, session.expires_at);
}

/** The session, its merchant and a reusable quote in one read, on every request; 404 when unknown, of a mode not served, or expired. */
async function findPayableSession(payer: PayerFlow, sessionId: string, now: number) {
  const found = await findSessionToQuote(payer.context.db, sessionId, { assets: quotableAssets(payer.context.config.modes, payer.services), now });
  if (!found || isExpired(found.session, now)) throw new TillError('not_found', { what: `Payment session ${sessionId}` });
  return found;
}

/** A settled TRANSIENT session answers its stored result and charges nobody, whatever proof comes. */
async function settledAnswer(flow: PayFlow, session: SessionRow): Promise<Answer | undefined> {
  if (session.order_type !== 'TRANSIENT' || session.status !== 'SUCCESS') return undefined;
  const payment = await firstSuccessfulPayment(flow.context.db, session.id);
  return payment && paidAnswer(payment, flow.rails);
}

/** A proof was sent and is refused: counted in till_x402_proofs_refused_total by reason. */
function refuseProof(flow: PayFlow, offer: Offer, error: X402ErrorCode, message?: string): Answer {
  flow.services.metrics.proofsRefused.inc({ reason: error });
  return challengeAnswer(error, offer, message === undefined ? {} : { message });
}

/**
 * A decoded proof is refused: recorded against its session for the merchant to see (attempts.ts),
 * then answered as any refusal. Only refusals write it; a successful proof never does.
 */
async function refuseAttempt(attempt: Attempt, error: X402ErrorCode, message?: string): Promise<Answer> {
  const { flow, session, proof, request } = attempt;
  await recordRefusedProof(flow.context.db, { session, proof, payerSigned: attempt.signer === 'payer', reason: error, now: flow.context.now() }, request.log);
  return refuseProof(flow, attempt.offer, error, message);
}

/** Named payment → duplicate → quote paid → local checks → the payer's own signature → facilitator verify → claim → settle. */
async function payWithProof(attempt: Attempt): Promise<Answer> {
  const { flow, proof, offer } = attempt;
  // A payment identifier already claimed answers its payment's outcome, whatever authorization the retry signed.
  const named = proof.paymentIdentifier === undefined ? undefined : await findPaymentByIdentifier(flow.context.db, proof.paymentIdentifier);
  if (named) return answerNamed(attempt, named);
  // A proof already claimed is never checked, verified or settled again, even once it has run out.
  const existing = await findPaymentByAuthorization(flow.context.db, proof.from, proof.nonce);
  if (existing) return answerDuplicate(attempt, existing);

  const quote = await quotePaidBy(attempt);
  const problem = localCheck({ proof, quote, offer, session: attempt.session, nowSeconds: BigInt(Math.floor(attempt.now / 1000)) });
  if (problem) return refuseAttempt(attempt, problem);
  // A signature that is not its payer's never reaches the facilitator, nor the session's count of what does.
  if (attempt.signer === 'stranger') return refuseAttempt(attempt, 'invalid_signature');
  await flow.services.limitVerifications(attempt.session.id);

  const request = facilitatorRequest(proof, quote!, offer);
  const verification = await verifyWithFacilitator(flow.context, attempt.request.log, flow.rails.facilitator, request, { sessionId: attempt.session.id });
  if (!verification.isValid) return answerInvalid(attempt, verification.invalidReason);
  // The facilitator found the signature its payer's, a smart wallet's included.
  const signed: Attempt = { ...attempt, signer: 'payer' };

  const now = flow.context.now();
  const claim = await claimPayment(flow.context, claimTerms(proof, quote!, attempt.session), {
    now,
    explorerTxUrl: flow.rails.explorerTxUrl,
    network: flow.rails.network.v1,
    followUpAt: now + flow.context.config.reconcileGraceMs,
  });
  if (claim.kind !== 'claimed') return answerLostClaim(signed, claim);
  return settle(signed, claim.payment, request);
}

/**
 * The quote this proof pays: usually the one just offered; an earlier unexpired quote of the same
 * value counts too. An editable session's quote must be of the amount asked for in this request.
 */
async function quotePaidBy({ flow, quote, proof, session, amountMinor, now }: Attempt): Promise<Quote | undefined> {
  const quoted = quote.usdc_amount === proof.value && quote.expires_at > now ? quote : await findQuoteForValue(flow.context.db, session.id, proof.value, now);
  return quoted && (session.editable !== 1 || quoted.amount_minor === amountMinor) ? quoted : undefined;
}

/** The facilitator refused the proof; a twin of it may have been claimed (and the nonce used) meanwhile. */
async function answerInvalid(attempt: Attempt, reason: string | undefined): Promise<Answer> {
  const { flow, proof, session } = attempt;
  const twin = await findPaymentByAuthorization(flow.context.db, proof.from, proof.nonce);
  if (twin) return answerDuplicate(attempt, twin);
  attempt.request.log.info({ reason, sessionId: session.id }, 'payment proof refused by the facilitator');
  const code = facilitatorErrorCode(reason);
  return refuseAttempt(attempt, code, `${X402_ERRORS[code]} (${reason ?? 'refused'})`);
}

/** A retry of a claimed proof waits for the first outcome; the same nonce with any other signature or for another session is a replay. */
async function answerDuplicate(attempt: Attempt, first: PaymentRow): Promise<Answer> {
  const { flow, proof, session } = attempt;
  if (first.session_id !== session.id || first.signature !== proof.signature) return refuseAttempt(attempt, 'nonce_used');
  return answerOutcome(attempt, () => findPaymentByAuthorization(flow.context.db, proof.from, proof.nonce));
}

/**
 * A proof naming a payment identifier already claimed: a retry of that payment (same session,
 * payer and amount asked) gets its outcome, and its own authorization is never verified or settled,
 * so one identifier charges at most once. Anything else reusing the identifier is refused (409); so
 * is a proof its payer did not sign, which must not read another's payment.
 */
async function answerNamed(attempt: Attempt, first: PaymentRow): Promise<Answer> {
  const { flow, proof, session } = attempt;
  const sameSession = first.session_id === session.id;
  if (!sameSession || first.payer !== proof.from || first.amount_minor !== attempt.amountMinor || first.currency !== session.currency) {
    const differs = !sameSession ? 'session' : first.payer !== proof.from ? 'payer' : 'amount';
    throw new TillError('payment_identifier_reused', { field: PAYMENT_IDENTIFIER_FIELD, differs });
  }
  if (attempt.signer === 'stranger') return refuseAttempt(attempt, 'invalid_signature');
  return answerOutcome(attempt, () => findPaymentByIdentifier(flow.context.db, proof.paymentIdentifier!));
}

/** The first payment's outcome, once it has one (or payment_in_progress after DUPLICATE_WAIT_MS). */
async function answerOutcome(attempt: Attempt, find: () => Promise<PaymentRow | undefined>): Promise<Answer> {
  const { flow, offer } = attempt;
  const payment = await waitForOutcome(find, DUPLICATE_WAIT_MS);
  if (payment?.status === 'SUCCESS') return paidAnswer(payment, flow.rails);
  if (payment?.status === 'FAILED') return challengeAnswer(facilitatorErrorCode(payment.failure_reason ?? undefined), offer);
  return inProgressAnswer();
}

/** The claim was lost: a duplicate of this proof, another payment in progress, or a session that closed or changed. */
async function answerLostClaim(attempt: Attempt, claim: Exclude<ClaimResult, { kind: 'claimed' }>): Promise<Answer> {
  const { flow, session } = attempt;
  const settled = () => firstSuccessfulPayment(flow.context.db, session.id);
  switch (claim.kind) {
    case 'duplicate':
      return answerDuplicate(attempt, claim.first);
    case 'identifier_taken':
      return answerNamed(attempt, claim.first);
    case 'session_busy': {
      const payment = session.order_type === 'TRANSIENT' ? await settled() : undefined;
      return payment ? paidAnswer(payment, flow.rails) : inProgressAnswer();
    }
    case 'session_closed': {
      const payment = claim.session?.status === 'SUCCESS' ? await settled() : undefined;
      if (payment) return paidAnswer(payment, flow.rails);
      if (!claim.session || isExpired(claim.session, flow.context.now())) throw new TillError('not_found', { what: `Payment session ${session.id}` });
      return refuseAttempt(attempt, 'session_changed');
    }
  }
}

/**
 * Settles the claimed payment. Only a definite success answers 200; anything else answers
 * payment_in_progress with no offer, so nobody is asked to pay again while the chain decides.
 */
async function settle(attempt: Attempt, claimed: PaymentRow, request: ReturnType<typeof facilitatorRequest>): Promise<Answer> {
  const { flow } = attempt;
  const outcome = await settleClaimed(flow.context, flow.rails, claimed, request);
  if (outcome.kind === 'settled') {
    flow.services.metrics.paymentsSettled.inc();
    return paidAnswer(outcome.payment, flow.rails);
  }
  if (outcome.kind === 'refused') {
    // Nothing was submitted and the chain agrees: the buyer may pay again, or is told why not.
    if (outcome.problem) throw facilitatorRefusal(outcome.problem);
    const code = facilitatorErrorCode(outcome.reason);
    return refuseAttempt(attempt, code, `${X402_ERRORS[code]} (${outcome.reason})`);
  }
  attempt.request.log.warn(
    { reason: outcome.reason, txHash: outcome.txHash, paymentId: claimed.id },
    'settlement not confirmed by the facilitator; the reconciler resolves the payment from the chain',
  );
  return inProgressAnswer();
}
