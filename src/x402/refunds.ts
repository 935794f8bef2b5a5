import { randomBytes } from 'node:crypto';
import type { PaymentPayload } from '@x402/core/types';
import { getAddress, type Hex, isHex, recoverTypedDataAddress } from 'viem';
import { TillError } from '../common/errors.ts';
import { CHAIN_ID, EIP712_DOMAIN_TYPE, TRANSFER_WITH_AUTHORIZATION, USDC_DOMAIN } from '../common/network.ts';
import type { AppContext } from '../context.ts';
import type { Mode } from '../db/schema.ts';
import { parseDecimalAmount } from '../money/decimal.ts';
import { formatUsdc, USDC_DECIMALS } from '../money/usdc.ts';
import type { PaymentRow } from '../payments/payments.ts';
import {
  createRefund,
  findDueRefunds,
  type RefundRow,
  recordRefundCheck,
  recordRefundOutcome,
  recordRefundSubmitted,
  refundedValue,
} from '../payments/refunds.ts';
import { type Authorization, blockAtTime, type ChainReader } from './chain.ts';
import { v2Requirements } from './challenge.ts';
import { type Facilitator, FacilitatorError } from './facilitator.ts';
import { X402_VERSION } from './protocol.ts';
import { reportFacilitatorProblem } from './settlement.ts';

/** How long a prepared refund authorization stays valid: time to connect a wallet and sign. */
export const REFUND_VALIDITY_S = 600n;
/** The longest validity a posted refund authorization may have (a little over the prepared one, for clocks). */
const MAX_VALIDITY_S = 900n;
/** A refund authorization must leave the facilitator this long to submit it. */
const MIN_VALIDITY_S = 10n;
export const MAX_REFUND_REASON = 200;
/** A PENDING refund is looked at again this often… */
const CHECK_EVERY_MS = 5_000;
/** …and its events are searched from this long (chain time) before it was recorded. */
const SKEW_S = 600n;

/** The scope a refund is made in: a merchant's own payments of the service's mode only. */
export type RefundScope = { merchantId: string; mode: Mode };

/** The EIP-3009 authorization of a refund: from the payout wallet that was paid, to the payer. */
export type RefundAuthorization = { from: Hex; to: Hex; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };

/** The EIP-712 typed data a payout wallet signs for a refund: USDC's own domain, the one the challenge names. */
export function refundTypedData(asset: string, message: RefundAuthorization) {
  return {
    domain: { ...USDC_DOMAIN, chainId: CHAIN_ID, verifyingContract: getAddress(asset) },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: 'TransferWithAuthorization' as const,
    message,
  };
}

/** The typed data as JSON for a browser wallet's eth_signTypedData_v4 (numbers as decimal strings, with its EIP712Domain type). */
export function typedDataJson(typed: ReturnType<typeof refundTypedData>) {
  return {
    domain: typed.domain,
    types: { EIP712Domain: EIP712_DOMAIN_TYPE, ...typed.types },
    primaryType: typed.primaryType,
    message: {
      ...typed.message,
      value: typed.message.value.toString(),
      validAfter: typed.message.validAfter.toString(),
      validBefore: typed.message.validBefore.toString(),
    },
  };
}

/** A merchant's settled payment by its order id (`TX-…`), in its mode; another merchant's is not found. */
export async function refundablePayment(context: Pick<AppContext, 'db'>, scope: RefundScope, publicOrderId: string): Promise<PaymentRow> {
  const payment = await context.db
    .selectFrom('payments')
    .selectAll()
    .where('public_order_id', '=', publicOrderId)
    .where('merchant_id', '=', scope.merchantId)
    .where('mode', '=', scope.mode)
    .executeTakeFirst();
  if (!payment) throw new TillError('not_found', { what: `Order ${publicOrderId}` });
  return payment;
}

/** What is left to refund of a payment, in USDC base units. */
export async function refundableValue(context: Pick<AppContext, 'db'>, payment: PaymentRow): Promise<bigint> {
  if (payment.status !== 'SUCCESS') return 0n;
  return payment.value - (await refundedValue(context.db, payment.id));
}

/** Parses a refund amount in USDC (up to 6 decimals) and checks it against what is left: 400 naming `amount`. */
export function refundValue(amount: string | undefined, remaining: bigint): bigint {
  if (amount === undefined || amount.trim() === '') throw new TillError('invalid_field', { field: 'amount', problem: 'is required' });
  const parsed = parseDecimalAmount(amount.trim(), USDC_DECIMALS);
  if (!parsed.ok) throw new TillError('invalid_field', { field: 'amount', problem: `must be a USDC amount with at most 6 decimals (${parsed.reason})` });
  if (remaining <= 0n) throw new TillError('invalid_field', { field: 'amount', problem: 'cannot be refunded: nothing is left to refund of this payment' });
  if (parsed.minor > remaining)
    throw new TillError('invalid_field', { field: 'amount', problem: `is more than is left to refund (${formatUsdc(remaining)} USDC)` });
  return parsed.minor;
}

/**
 * The authorization for a refund of `amount` USDC of a payment, to be signed by its payout wallet:
 * a fresh nonce, valid at once for REFUND_VALIDITY_S.
 */
export async function prepareRefund(context: Pick<AppContext, 'db' | 'now'>, scope: RefundScope, publicOrderId: string, amount: string | undefined) {
  const payment = await refundablePayment(context, scope, publicOrderId);
  const value = refundValue(amount, await refundableValue(context, payment));
  const message: RefundAuthorization = {
    from: getAddress(payment.pay_to),
    to: getAddress(payment.payer),
    value,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(context.now() / 1000)) + REFUND_VALIDITY_S,
    nonce: `0x${randomBytes(32).toString('hex')}`,
  };
  return { payment, typedData: refundTypedData(payment.asset, message) };
}

export type RefundRequest = {
  amount: string | undefined;
  validBefore: string | undefined;
  nonce: string | undefined;
  signature: string | undefined;
  reason: string | undefined;
};

/** What a refund needs besides the database: the facilitator that submits it and the chain that confirms it. */
export type RefundServices = { facilitator: Facilitator; chain: ChainReader | undefined };

/**
 * Makes a refund: checks the signed authorization (signed by the payment's payout wallet, to its
 * payer, for no more than is left), records it PENDING (atomically against what is left), asks the
 * facilitator to verify and settle it, and looks at the chain at once. A refusal by the facilitator's
 * verification fails the refund (nothing was submitted, no money moved); anything else is decided
 * from the chain, now or by the reconciler.
 */
export async function makeRefund(
  context: AppContext,
  services: RefundServices,
  scope: RefundScope,
  publicOrderId: string,
  request: RefundRequest,
): Promise<RefundRow> {
  const payment = await refundablePayment(context, scope, publicOrderId);
  const value = refundValue(request.amount, await refundableValue(context, payment));
  const reason = request.reason?.trim() ? request.reason.trim() : null;
  if (reason !== null && reason.length > MAX_REFUND_REASON)
    throw new TillError('invalid_field', { field: 'reason', problem: `must be at most ${MAX_REFUND_REASON} characters` });
  const nowS = BigInt(Math.floor(context.now() / 1000));
  const validBefore = /^\d{1,15}$/.test(request.validBefore ?? '') ? BigInt(request.validBefore!) : undefined;
  if (validBefore === undefined) throw new TillError('invalid_field', { field: 'validBefore', problem: 'must be a time in Unix seconds' });
  if (validBefore < nowS + MIN_VALIDITY_S) throw new TillError('invalid_field', { field: 'validBefore', problem: 'has passed: prepare the refund again' });
  if (validBefore > nowS + MAX_VALIDITY_S) throw new TillError('invalid_field', { field: 'validBefore', problem: 'is too far ahead' });
  const nonce = request.nonce;
  if (!nonce || !/^0x[0-9a-fA-F]{64}$/.test(nonce))
    throw new TillError('invalid_field', { field: 'nonce', problem: 'must be 32 bytes as 0x and 64 hex digits' });
  const signature = request.signature;
  if (!signature || !isHex(signature) || signature.length < 132)
    throw new TillError('invalid_field', { field: 'signature', problem: 'must be the EIP-712 signature of the refund, 0x and hex' });
  const authorization: RefundAuthorization = {
    from: getAddress(payment.pay_to),
    to: getAddress(payment.payer),
    value,
    validAfter: 0n,
    validBefore,
    nonce: nonce as Hex,
  };
  let signer: string;
  try {
    signer = await recoverTypedDataAddress({ ...refundTypedData(payment.asset, authorization), signature });
  } catch {
    throw new TillError('invalid_field', { field: 'signature', problem: 'is not a valid EIP-712 signature' });
  }
  if (signer.toLowerCase() !== payment.pay_to.toLowerCase())
    throw new TillError('invalid_field', {
      field: 'signature',
      problem: `is not by the payout wallet that received this payment (${getAddress(payment.pay_to)}) for these terms`,
    });
  const created = await createRefund(
    context.db,
    context.dbKind,
    payment,
    { value, reason, nonce, validBefore, signature, nextCheckAt: context.now() + CHECK_EVERY_MS },
    context.now(),
  );
  if (created.kind === 'over')
    throw new TillError('invalid_field', { field: 'amount', problem: `is more than is left to refund (${formatUsdc(created.remaining)} USDC)` });
  if (created.kind === 'nonce_used') throw new TillError('invalid_field', { field: 'nonce', problem: 'was used by another refund: prepare the refund again' });
  return submitRefund(context, services, created.refund, authorization);
}

function facilitatorRequest(refund: RefundRow, authorization: RefundAuthorization, baseUrl: string) {
  const requirements = v2Requirements({ payTo: getAddress(refund.to_address), asset: getAddress(refund.asset), usdcAmount: refund.value });
  const payload: PaymentPayload = {
    x402Version: X402_VERSION,
    resource: { url: `${baseUrl}/dashboard/orders`, description: `Refund ${refund.id}`, mimeType: 'application/json' },
    accepted: requirements,
    payload: {
      signature: refund.signature,
      authorization: {
        from: authorization.from,
        to: authorization.to,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
        nonce: authorization.nonce,
      },
    },
  };
  return { payload, requirements };
}

const change = (context: AppContext) => ({ now: context.now(), explorerTxUrl: context.config.explorerTxUrl });

async function submitRefund(context: AppContext, services: RefundServices, refund: RefundRow, authorization: RefundAuthorization): Promise<RefundRow> {
  const request = facilitatorRequest(refund, authorization, context.config.baseUrl);
  const subject = { refundId: refund.id, paymentId: refund.payment_id };
  let verdict: Awaited<ReturnType<Facilitator['verify']>> | undefined;
  try {
    verdict = await services.facilitator.verify(request.payload, request.requirements);
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    reportFacilitatorProblem(context, context.log, error.problem, subject);
    verdict = undefined;
  }
  if (verdict && !verdict.isValid) {
    // Refused before anything was submitted: the authorization was never sent to the chain, no money moved.
    const reason = `refused by the facilitator before settling, no money moved: ${verdict.invalidReason}`;
    return (await recordRefundOutcome(context, refund, { status: 'FAILED', error: reason }, change(context))) ?? refund;
  }
  if (verdict) {
    const outcome = await services.facilitator.settle(request.payload, request.requirements);
    if (outcome.kind === 'settled') await recordRefundSubmitted(context.db, refund.id, outcome.transaction, context.now());
    else {
      if (outcome.problem) reportFacilitatorProblem(context, context.log, outcome.problem, subject);
      await recordRefundCheck(context.db, refund.id, { nextCheckAt: context.now(), note: outcome.reason, now: context.now() });
    }
  }
  const current = (await context.db.selectFrom('refunds').selectAll().where('id', '=', refund.id).executeTakeFirst()) ?? refund;
  if (!services.chain) return current;
  try {
    return (await followUpRefund(context, services.chain, current, await chainView(services.chain, context.config.finalityConfirmations))) ?? current;
  } catch (error) {
    context.log.warn({ err: error, refundId: refund.id }, 'could not read the chain for the refund yet; the reconciler looks again');
    return current;
  }
}

function authorizationOf(refund: RefundRow): Authorization {
  return { asset: refund.asset, payer: refund.from_address, payTo: refund.to_address, value: refund.value, nonce: refund.nonce };
}

type ChainView = { pinned: { number: bigint; timestamp: bigint } };

async function chainView(chain: ChainReader, confirmations: number): Promise<ChainView> {
  const head = await chain.head();
  const depth = BigInt(confirmations);
  return { pinned: await chain.block(head > depth ? head - depth : 0n) };
}

/**
 * One look at a PENDING refund on the chain: SUCCEEDED when a transaction used its authorization
 * and moved exactly its value from the payout wallet to the payer; FAILED when the authorization
 * was cancelled, or is unused at a block past validBefore; otherwise looked at again later.
 */
async function followUpRefund(context: AppContext, chain: ChainReader, refund: RefundRow, view: ChainView): Promise<RefundRow | undefined> {
  const auth = authorizationOf(refund);
  const succeed = (txHash: string, blockNumber: bigint) => recordRefundOutcome(context, refund, { status: 'SUCCEEDED', txHash, blockNumber }, change(context));
  if (refund.tx_hash) {
    const check = await chain.checkTransfer(refund.tx_hash, auth);
    if (check.kind === 'holds') return succeed(refund.tx_hash, check.blockNumber);
  }
  if (!(await chain.authorizationState(auth, view.pinned.number))) {
    if (view.pinned.timestamp >= refund.valid_before)
      return recordRefundOutcome(context, refund, { status: 'FAILED', error: 'authorization expired unused: no money moved' }, change(context));
    await recordRefundCheck(context.db, refund.id, { nextCheckAt: context.now() + CHECK_EVERY_MS, note: null, now: context.now() });
    return undefined;
  }
  const createdS = BigInt(Math.floor(refund.created_at / 1000));
  const from = await blockAtTime(chain, createdS > SKEW_S ? createdS - SKEW_S : 0n, view.pinned);
  const events = await chain.authorizationEvents(auth, from, view.pinned.number);
  for (const event of events.filter((e) => e.kind === 'used')) {
    const check = await chain.checkTransfer(event.txHash, auth);
    if (check.kind === 'holds') return succeed(event.txHash, check.blockNumber);
  }
  if (events.some((e) => e.kind === 'canceled'))
    return recordRefundOutcome(context, refund, { status: 'FAILED', error: 'authorization cancelled on chain: no money moved' }, change(context));
  await recordRefundCheck(context.db, refund.id, {
    nextCheckAt: context.now() + CHECK_EVERY_MS,
    note: 'authorization used, its transfer not found yet',
    now: context.now(),
  });
  return undefined;
}

/** The reconciler's pass over PENDING refunds: each due one is looked at on the chain, until it is decided. */
export async function followUpRefunds(context: AppContext, chain: ChainReader, confirmations: bigint): Promise<number> {
  const due = await findDueRefunds(context.db, context.config.mode, context.now(), 100);
  if (due.length === 0) return 0;
  const view = await chainView(chain, Number(confirmations));
  for (const refund of due) {
    try {
      await followUpRefund(context, chain, refund, view);
    } catch (error) {
      context.metrics.backgroundRowFailures.inc({ pass: 'reconciler' });
      context.log.warn({ err: error, refundId: refund.id }, 'could not reconcile refund yet');
      await recordRefundCheck(context.db, refund.id, { nextCheckAt: context.now() + CHECK_EVERY_MS, note: 'could not read the chain', now: context.now() });
    }
  }
  return due.length;
}
