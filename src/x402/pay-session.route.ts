import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { TillError, invalidField } from '../common/errors.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { parseDecimalAmount } from '../money/decimal.ts';
import { currencyExponent } from '../money/iso4217.ts';
import { RateUnavailableError, UnsupportedCurrencyError } from '../money/rates.ts';
import { findPaymentByAuthorization, firstSuccessfulPayment, type PaymentRow } from '../payments/payments.ts';
import { isExpired, type SessionRow } from '../sessions/sessions.ts';
import { decimalNumber } from '../money/iso4217.ts';
import { challenge, sessionResourceUrl, type Offer } from './challenge.ts';
import { decodeProof, isOurNetwork, isOurScheme, type Proof } from './payload.ts';
import { MAX_VALIDITY_S, MIN_VALIDITY_LEFT_S, X402_ERRORS, type X402ErrorCode } from './protocol.ts';
import { findQuoteForValue, findSessionToQuote, quoteFor, type Quote } from './quotes.ts';
import { claimPayment, facilitatorRequest, paidResponse, settleClaimed, waitForOutcome } from './settlement.ts';
import type { X402Services } from './services.ts';

const SESSION_ID_MAX = 64;
const Params = z.strictObject({ sessionId: z.string().min(1).max(SESSION_ID_MAX) });
const Query = z.strictObject({ amount: z.string().optional().meta({ description: 'Buyer-chosen amount in the session currency; editable sessions only, on both requests' }) });

const PaidBody = z.object({ status: z.literal('SUCCESS'), paymentSessionId: z.string(), payTo: z.string(), receipt: z.string(), paymentId: z.string() }).meta({ id: 'X402Paid' });
const ChallengeBody = z.object({ x402Version: z.literal(2), error: z.string(), message: z.string(), accepts: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'X402Challenge' });

const DUPLICATE_WAIT_MS = 10_000;
const RETRY_AFTER_S = '5';

function docFor(url: string): RouteDoc {
  return {
    method: 'GET',
    url,
    tag: 'x402',
    summary: 'Pay a session over x402 (E3)',
    description: 'Public. Without a proof: 402 with the challenge (body and PAYMENT-REQUIRED header). With X-PAYMENT or PAYMENT-SIGNATURE: verified, settled once, 200. See docs/x402.md for every `error` code.',
    security: 'none',
    params: Params,
    query: Query,
    responses: {
      200: { description: 'Paid, or already settled (idempotent); X-PAYMENT-RESPONSE and PAYMENT-RESPONSE headers', schema: PaidBody },
      400: { description: '?amount= malformed, or sent for a fixed-amount session', schema: ErrorResponse },
      402: { description: 'Challenge: no payment yet, or the proof was refused (`error` says why)', schema: ChallengeBody },
      404: { description: 'Unknown or expired session', schema: ErrorResponse },
      422: { description: 'No payout wallet configured, so no payTo can be quoted', schema: ErrorResponse },
      429: { description: 'Too many payment proofs from this client or for this session, or too many new quotes (distinct ?amount= values) for this session', schema: ErrorResponse },
      503: { description: 'No fresh exchange rate for the session currency (rate_unavailable), or the facilitator does not answer (facilitator_unavailable); nothing was charged', schema: ErrorResponse },
    },
  };
}

function facilitatorErrorCode(reason: string | undefined): X402ErrorCode {
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

/** Checks a proof against what the session's own stored quote offered, before any facilitator call. */
function localCheck(proof: Proof, quote: Quote | undefined, offer: Offer, session: SessionRow, nowSeconds: bigint): X402ErrorCode | undefined {
  if (!isOurScheme(proof.scheme)) return 'unsupported_scheme';
  if (!isOurNetwork(proof.network)) return 'wrong_network';
  if (proof.to !== offer.payTo.toLowerCase()) return 'wrong_pay_to';
  if (proof.asset !== undefined && proof.asset.toLowerCase() !== offer.asset.toLowerCase()) return 'wrong_asset';
  if (proof.resource !== undefined && proof.resource !== offer.resourceUrl) return 'wrong_resource';
  if (!quote) return 'amount_mismatch';
  if (quote.session_version !== session.version) return 'session_changed';
  if (quote.pay_to.toLowerCase() !== proof.to) return 'wrong_pay_to';
  if (proof.validBefore < nowSeconds + BigInt(MIN_VALIDITY_LEFT_S)) return 'authorization_expired';
  if (proof.validBefore > nowSeconds + BigInt(MAX_VALIDITY_S)) return 'authorization_too_long';
  if (proof.validAfter > nowSeconds) return 'authorization_not_yet_valid';
  return undefined;
}

export function registerPaySession(app: FastifyInstance, context: AppContext, services: X402Services): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { sessionId, query } = readInput(request);
    const now = context.now();
    // The session, its merchant's current name and wallet, and a quote to reuse: one read, on every request.
    const found = await findSessionToQuote(context.db, sessionId, { asset: services.usdcAddress, now });
    if (!found || isExpired(found.session, now)) throw new TillError('not_found', { what: `Payment session ${sessionId}` });
    const { session } = found;

    const paid = (payment: NonNullable<Awaited<ReturnType<typeof firstSuccessfulPayment>>>) => {
      const response = paidResponse(payment, context.config.explorerTxUrl);
      return reply.code(200).headers(response.headers).send(response.body);
    };
    // A settled TRANSIENT session answers its stored result and charges nobody, whatever proof comes.
    if (session.order_type === 'TRANSIENT' && session.status === 'SUCCESS') {
      const payment = await firstSuccessfulPayment(context.db, session.id);
      if (payment) return paid(payment);
    }

    const payTo = session.pay_to ?? session.merchant_wallet_address;
    if (!payTo) throw new TillError('no_pay_to');

    const exponent = currencyExponent(session.currency) ?? 2;
    let amountMinor = session.amount_minor;
    if (session.editable === 1) {
      const floor = session.min_amount_minor === null ? null : decimalNumber(session.min_amount_minor, session.currency);
      if (query.amount === undefined) {
        const c = challenge('amount_required', undefined, { minAmount: floor, currency: session.currency });
        return reply.code(402).headers(c.headers).send(c.body);
      }
      const parsed = parseDecimalAmount(query.amount, exponent);
      if (!parsed.ok) throw invalidField('amount', parsed.reason);
      if (session.min_amount_minor !== null && parsed.minor < session.min_amount_minor) {
        const c = challenge('amount_below_minimum', undefined, { minAmount: floor, currency: session.currency });
        return reply.code(402).headers(c.headers).send(c.body);
      }
      amountMinor = parsed.minor;
    } else if (query.amount !== undefined) {
      throw invalidField('amount', 'is only accepted for sessions with an editable amount');
    }

    let quote: Quote;
    try {
      quote = await quoteFor(context.db, services.rates, { session, amountMinor, payTo, asset: services.usdcAddress, now, candidate: found.reusable, beforeNewQuote: () => services.limitNewQuotes(session.id) });
    } catch (error) {
      // A currency the provider stopped quoting is as unavailable as a stale rate: never a made-up quote.
      if (error instanceof RateUnavailableError || error instanceof UnsupportedCurrencyError) throw new TillError('rate_unavailable', { currency: session.currency });
      throw error;
    }
    const offer: Offer = {
      resourceUrl: sessionResourceUrl(context.config.baseUrl, session.id),
      description: `${session.merchant_name}: ${session.concept ?? `payment session ${session.id}`}`,
      payTo,
      asset: services.usdcAddress,
      usdcAmount: quote.usdc_amount,
    };
    const refuse = (error: X402ErrorCode, message?: string, headers: Record<string, string> = {}) => {
      const c = challenge(error, offer, {}, message);
      return reply.code(402).headers({ ...c.headers, ...headers }).send(c.body);
    };
    /** A proof was sent and is refused: counted in till_x402_proofs_refused_total by reason. */
    const refuseProof = (error: X402ErrorCode, message?: string) => {
      services.metrics.proofsRefused.inc({ reason: error });
      return refuse(error, message);
    };

    const answerFor = async (payment: Awaited<ReturnType<typeof waitForOutcome>>) => {
      if (payment?.status === 'SUCCESS') return paid(payment);
      if (payment?.status === 'FAILED') return refuse(facilitatorErrorCode(payment.failure_reason ?? undefined));
      return refuse('payment_in_progress', undefined, { 'retry-after': RETRY_AFTER_S });
    };
    // A retry of a claimed proof waits for the first outcome; the same nonce with any other
    // signature or for another session is a replay.
    const answerDuplicate = async (first: PaymentRow) => {
      if (first.session_id !== session.id || first.signature !== proof.signature) return refuseProof('nonce_used');
      return answerFor(await waitForOutcome(context.db, proof.from, proof.nonce, DUPLICATE_WAIT_MS));
    };

    const decoded = decodeProof({ xPayment: header(request, 'x-payment'), paymentSignature: header(request, 'payment-signature') });
    if (!decoded) return refuse('payment_required');
    if (!decoded.ok) return refuseProof(decoded.error, decoded.message);
    const proof = decoded.proof;
    await services.limitProofs(request.ip, session.id);

    // A proof already claimed is never checked, verified or settled again, even once it has run out.
    const existing = await findPaymentByAuthorization(context.db, proof.from, proof.nonce);
    if (existing) return answerDuplicate(existing);

    // Usually the proof pays the quote just offered; an earlier unexpired quote of the same value counts too.
    const quoted = quote.usdc_amount === proof.value && quote.expires_at > now ? quote : await findQuoteForValue(context.db, session.id, proof.value, now);
    const matching = quoted && (session.editable !== 1 || quoted.amount_minor === amountMinor) ? quoted : undefined;
    const problem = localCheck(proof, matching, offer, session, BigInt(Math.floor(now / 1000)));
    if (problem) return refuseProof(problem);
    const payQuote = matching!;

    const facilitatorCall = facilitatorRequest(proof, payQuote, { url: offer.resourceUrl, description: offer.description });
    let verification;
    try {
      verification = await services.facilitator.verify(facilitatorCall.payload, facilitatorCall.requirements);
    } catch {
      throw new TillError('facilitator_unavailable');
    }
    if (!verification.isValid) {
      // A twin of this proof may have been claimed (and the nonce used) while we verified.
      const twin = await findPaymentByAuthorization(context.db, proof.from, proof.nonce);
      if (twin) return answerDuplicate(twin);
      const code = facilitatorErrorCode(verification.invalidReason);
      request.log.info({ reason: verification.invalidReason, sessionId: session.id }, 'payment proof refused by the facilitator');
      return refuseProof(code, `${X402_ERRORS[code]} (${verification.invalidReason ?? 'refused'})`);
    }

    const claim = await claimPayment(context, { session, quote: payQuote, proof, now: context.now(), explorerTxUrl: context.config.explorerTxUrl });
    switch (claim.kind) {
      case 'duplicate':
        return answerDuplicate(claim.first);
      case 'session_busy': {
        const settled = await firstSuccessfulPayment(context.db, session.id);
        if (settled && session.order_type === 'TRANSIENT') return paid(settled);
        return refuse('payment_in_progress', undefined, { 'retry-after': RETRY_AFTER_S });
      }
      case 'session_closed': {
        const current = claim.session;
        if (current?.status === 'SUCCESS') {
          const settled = await firstSuccessfulPayment(context.db, session.id);
          if (settled) return paid(settled);
        }
        if (!current || isExpired(current, context.now())) throw new TillError('not_found', { what: `Payment session ${sessionId}` });
        return refuseProof('session_changed');
      }
      case 'claimed': {
        const outcome = await settleClaimed(context, services.facilitator, claim.payment, facilitatorCall);
        if (outcome.kind === 'settled') {
          services.metrics.paymentsSettled.inc();
          return paid(outcome.payment);
        }
        if (outcome.kind === 'refused') {
          request.log.warn({ reason: outcome.reason, paymentId: claim.payment.id }, 'settlement refused; the reconciler resolves the payment from the chain');
          return refuse(facilitatorErrorCode(outcome.reason), `${outcome.message} (${outcome.reason})`, { 'retry-after': RETRY_AFTER_S });
        }
        return refuse('payment_in_progress', undefined, { 'retry-after': RETRY_AFTER_S });
      }
    }
  };

  for (const url of ['/x402/session/{sessionId}', '/checkout/v2/x402/session/{sessionId}']) addRoute(app, docFor(url), {}, handler);
}

/**
 * Params and query as the zod schemas read them, without running them on the common shapes: an id
 * of 1–64 characters, and no query or only one ?amount=. Anything else goes through the schemas,
 * whose refusal names the field.
 */
function readInput(request: FastifyRequest): { sessionId: string; query: z.output<typeof Query> } {
  const { sessionId } = request.params as { sessionId?: unknown };
  const query = request.query as Record<string, unknown>;
  let plain = typeof sessionId === 'string' && sessionId.length >= 1 && sessionId.length <= SESSION_ID_MAX;
  for (const key in query) if (key !== 'amount' || typeof query[key] !== 'string') plain = false;
  if (plain) return { sessionId: sessionId as string, query: typeof query.amount === 'string' ? { amount: query.amount } : {} };
  return { sessionId: validate(Params, request.params).sessionId, query: validate(Query, request.query) };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
