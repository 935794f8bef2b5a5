import { randomBytes } from 'node:crypto';
import { getAddress, type Hex, isHex, recoverTypedDataAddress } from 'viem';
import { TillError } from '../common/errors.ts';
import { EIP712_DOMAIN_TYPE, type Network, TRANSFER_WITH_AUTHORIZATION, USDC_DOMAIN } from '../common/network.ts';
import { networkOf } from '../config.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { parseDecimalAmount } from '../money/decimal.ts';
import { formatUsdc, USDC_DECIMALS } from '../money/usdc.ts';
import type { PaymentRow } from '../payments/payments.ts';
import {
  createRefund,
  findDueRefunds,
  type LimitBreach,
  type RefundMaker,
  type RefundOutcome,
  type RefundRow,
  recordRefundCheck,
  recordRefundOutcome,
  recordRefundSubmitted,
  refundedValue,
} from '../payments/refunds.ts';
import { authorizationRequest } from './authorization.ts';
import { type ChainView, describe, examine, type Finding, searchStart, viewChain } from './examine.ts';
import { type Facilitator, FacilitatorError, reportFacilitatorProblem } from './facilitator.ts';
import type { Rails } from './rails.ts';
import type { ChainReader } from './reader.ts';

/** How long a prepared refund authorization stays valid: time to connect a wallet and sign. */
export const REFUND_VALIDITY_S = 600n;
/** The longest validity a posted refund authorization may have (a little over the prepared one, for clocks). */
const MAX_VALIDITY_S = 900n;
/** A refund authorization must leave the facilitator this long to submit it. */
const MIN_VALIDITY_S = 10n;
export const MAX_REFUND_REASON = 200;
/** A PENDING refund is looked at again this often. */
const CHECK_EVERY_MS = 5_000;

/** The scope a refund is made in: a merchant's own payments of the service's mode only. */
export type RefundScope = { merchantId: string; mode: Mode };

/** The EIP-3009 authorization of a refund: from the payout wallet that was paid, to the payer. */
export type RefundAuthorization = { from: Hex; to: Hex; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };

/** The EIP-712 typed data a payout wallet signs for a refund: USDC's own domain, the one the challenge names. */
export function refundTypedData(asset: string, message: RefundAuthorization, network: Network) {
  return {
    domain: { ...USDC_DOMAIN, chainId: network.chainId, verifyingContract: getAddress(asset) },
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
  const read = refundAmount(amount, remaining);
  if ('problem' in read) throw new TillError('invalid_field', { field: 'amount', problem: read.problem });
  return read.value;
}

/**
 * The authorization for a refund of `amount` USDC of a payment, to be signed by its payout wallet:
 * a fresh nonce, valid at once for REFUND_VALIDITY_S.
 */
export async function prepareRefund(context: Pick<AppContext, 'db' | 'now' | 'config'>, scope: RefundScope, publicOrderId: string, amount: string | undefined) {
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
  return { payment, typedData: refundTypedData(payment.asset, message, networkOf(context.config, payment.mode)) };
}

export type RefundRequest = {
  amount: string | undefined;
  validBefore: string | undefined;
  nonce: string | undefined;
  signature: string | undefined;
  reason: string | undefined;
};

/** What a refund needs besides the database: its mode's rails, the facilitator that submits it and the chain that decides it. */
export type RefundServices = Rails;

/** A posted refund as read: the payment it refunds, what is left of it, and each field parsed where it could be. */
type PostedRefund = {
  payment: PaymentRow;
  amount: ReturnType<typeof refundAmount>;
  nowS: bigint;
  request: RefundRequest;
  reason: string | null;
  validBefore: bigint | undefined;
};

type RefundField = 'amount' | 'reason' | 'validBefore' | 'nonce' | 'signature';

/**
 * The checks a posted refund passes before anything is recorded, one refusal each, in this order:
 * the first that fails is the 400, naming its field. The amount against what is left is checked
 * again, atomically, when the refund is recorded; the signer last, once the terms are known good.
 */
const REFUND_CHECKS: ReadonlyArray<[RefundField, (posted: PostedRefund) => string | undefined]> = [
  ['amount', ({ amount }) => ('problem' in amount ? amount.problem : undefined)],
  ['reason', ({ reason }) => (reason !== null && reason.length > MAX_REFUND_REASON ? `must be at most ${MAX_REFUND_REASON} characters` : undefined)],
  ['validBefore', ({ validBefore }) => (validBefore === undefined ? 'must be a time in Unix seconds' : undefined)],
  ['validBefore', ({ validBefore, nowS }) => (validBefore! < nowS + MIN_VALIDITY_S ? 'has passed: prepare the refund again' : undefined)],
  ['validBefore', ({ validBefore, nowS }) => (validBefore! > nowS + MAX_VALIDITY_S ? 'is too far ahead' : undefined)],
  ['nonce', ({ request }) => (!request.nonce || !/^0x[0-9a-fA-F]{64}$/.test(request.nonce) ? 'must be 32 bytes as 0x and 64 hex digits' : undefined)],
  [
    'signature',
    ({ request }) =>
      !request.signature || !isHex(request.signature) || request.signature.length < 132 ? 'must be the EIP-712 signature of the refund, 0x and hex' : undefined,
  ],
];

/** A refund amount in USDC base units, or why it cannot be refunded of what is left. */
function refundAmount(amount: string | undefined, remaining: bigint): { value: bigint } | { problem: string } {
  if (amount === undefined || amount.trim() === '') return { problem: 'is required' };
  const parsed = parseDecimalAmount(amount.trim(), USDC_DECIMALS);
  if (!parsed.ok) return { problem: `must be a USDC amount with at most 6 decimals (${parsed.reason})` };
  if (remaining <= 0n) return { problem: 'cannot be refunded: nothing is left to refund of this payment' };
  if (parsed.minor > remaining) return { problem: `is more than is left to refund (${formatUsdc(remaining)} USDC)` };
  return { value: parsed.minor };
}

/**
 * Makes a refund: checks the signed authorization (REFUND_CHECKS, then that the payment's payout
 * wallet signed it, to its payer), records it PENDING (atomically against what is left), asks the
 * facilitator to verify and settle it, and looks at the chain at once. Only the chain decides how
 * it ends: a refusal by the facilitator leaves it PENDING — the signed authorization could still be
 * relayed by anyone holding it — and it counts against what is left until the chain shows it
 * used (SUCCEEDED) or unusable (FAILED: expired unused, or cancelled).
 */
export async function makeRefund(
  context: AppContext,
  /** The rails of the scope's mode; none (no facilitator for it): 503 once the refund is known good, nothing recorded. */
  services: RefundServices | undefined,
  scope: RefundScope,
  publicOrderId: string,
  request: RefundRequest,
  maker: RefundMaker,
  alsoInTransaction?: (trx: Db, refund: RefundRow) => Promise<void>,
): Promise<RefundRow> {
  const payment = await refundablePayment(context, scope, publicOrderId);
  const validBefore = /^\d{1,15}$/.test(request.validBefore ?? '') ? BigInt(request.validBefore!) : undefined;
  const posted: PostedRefund = {
    payment,
    amount: refundAmount(request.amount, await refundableValue(context, payment)),
    nowS: BigInt(Math.floor(context.now() / 1000)),
    request,
    reason: request.reason?.trim() ? request.reason.trim() : null,
    validBefore,
  };
  for (const [field, check] of REFUND_CHECKS) {
    const problem = check(posted);
    if (problem) throw new TillError('invalid_field', { field, problem });
  }
  const { value } = posted.amount as { value: bigint };
  const authorization: RefundAuthorization = {
    from: getAddress(payment.pay_to),
    to: getAddress(payment.payer),
    value,
    validAfter: 0n,
    validBefore: validBefore!,
    nonce: request.nonce as Hex,
  };
  const signature = request.signature as Hex;
  if (!services) throw new TillError('facilitator_unavailable');
  await checkSigner(payment, authorization, signature, services.network);
  const created = await createRefund(
    context.db,
    context.dbKind,
    payment,
    {
      value,
      reason: posted.reason,
      nonce: authorization.nonce,
      validBefore: authorization.validBefore,
      signature,
      nextCheckAt: context.now() + CHECK_EVERY_MS,
    },
    maker,
    context.now(),
    alsoInTransaction,
  );
  if (created.kind === 'limit') throw new RefundLimitRefusal(created.breach, value);
  if (created.kind === 'over')
    throw new TillError('invalid_field', { field: 'amount', problem: `is more than is left to refund (${formatUsdc(created.remaining)} USDC)` });
  if (created.kind === 'nonce_used') throw new TillError('invalid_field', { field: 'nonce', problem: 'was used by another refund: prepare the refund again' });
  return submitRefund(context, services, created.refund, payment);
}

/** A coding agent's refund over a limit its merchant set on its grant (or with none set): nothing was recorded or moved. */
export class RefundLimitRefusal extends Error {
  readonly breach: LimitBreach;
  /** The refund's value, USDC base units. */
  readonly value: bigint;
  constructor(breach: LimitBreach, value: bigint) {
    super(`refund refused by the agent's refund limit (${breach.limit})`);
    this.breach = breach;
    this.value = value;
  }
}

/** The refund is signed by the payout wallet that received the payment, for exactly these terms: else 400 naming `signature`. */
async function checkSigner(payment: PaymentRow, authorization: RefundAuthorization, signature: Hex, network: Network): Promise<void> {
  let signer: string;
  try {
    signer = await recoverTypedDataAddress({ ...refundTypedData(payment.asset, authorization, network), signature });
  } catch {
    throw new TillError('invalid_field', { field: 'signature', problem: 'is not a valid EIP-712 signature' });
  }
  if (signer.toLowerCase() !== payment.pay_to.toLowerCase())
    throw new TillError('invalid_field', {
      field: 'signature',
      problem: `is not by the payout wallet that received this payment (${getAddress(payment.pay_to)}) for these terms`,
    });
}

const change = (context: AppContext, rails: Pick<Rails, 'explorerTxUrl' | 'network'>) => ({
  now: context.now(),
  explorerTxUrl: rails.explorerTxUrl,
  network: rails.network.v1,
});

/**
 * Hands the refund to the facilitator: verify, then settle. Whatever it answers, the refund stays
 * PENDING until the chain decides (a settled transaction is kept for the chain to confirm); then
 * one look at the chain at once.
 */
async function submitRefund(context: AppContext, services: RefundServices, refund: RefundRow, payment: PaymentRow): Promise<RefundRow> {
  const request = authorizationRequest(
    {
      asset: refund.asset,
      from: refund.from_address,
      to: refund.to_address,
      value: refund.value,
      validAfter: 0n,
      validBefore: refund.valid_before,
      nonce: refund.nonce,
      signature: refund.signature,
    },
    // The resource a refund pays for is the order it refunds: its public receipt.
    {
      url: `${context.config.baseUrl}/checkout/v2/orders/receipt/${payment.public_order_id}`,
      description: `Refund ${refund.id} of order ${payment.public_order_id}`,
    },
    services.network,
  );
  const subject = { refundId: refund.id, paymentId: refund.payment_id };
  const note = await submitted(context, services.facilitator, request, subject, refund);
  if (note) await recordRefundCheck(context.db, refund.id, { nextCheckAt: context.now(), note, now: context.now() });
  const current = (await context.db.selectFrom('refunds').selectAll().where('id', '=', refund.id).executeTakeFirst()) ?? refund;
  if (!services.chain) return current;
  try {
    const view = await viewChain(services.chain, services.confirmations);
    return (await followUpRefund(context, services, current, view)) ?? current;
  } catch (error) {
    context.log.warn({ err: error, refundId: refund.id }, 'could not read the chain for the refund yet; the reconciler looks again');
    return current;
  }
}

/** Verify, then settle; answers the note to record when the facilitator did not settle it (undefined once a transaction is recorded). */
async function submitted(
  context: AppContext,
  facilitator: Facilitator,
  request: ReturnType<typeof authorizationRequest>,
  subject: { refundId: string; paymentId: string },
  refund: RefundRow,
): Promise<string | undefined> {
  try {
    const verdict = await facilitator.verify(request.payload, request.requirements);
    if (!verdict.isValid)
      return `refused by the facilitator before settling (${verdict.invalidReason}): nothing was submitted; the chain decides, FAILED once the authorization expires unused`;
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    reportFacilitatorProblem(context, context.log, error.problem, subject);
    return `the facilitator gave no verdict (${error.problem.kind}): nothing was submitted; the chain decides`;
  }
  const outcome = await facilitator.settle(request.payload, request.requirements);
  if (outcome.kind === 'settled') {
    await recordRefundSubmitted(context.db, refund.id, outcome.transaction, context.now());
    return undefined;
  }
  if (outcome.problem) reportFacilitatorProblem(context, context.log, outcome.problem, subject);
  return `not settled by the facilitator (${outcome.reason}); the chain decides`;
}

/**
 * How a look at the chain ends a PENDING refund: the transfer found is SUCCEEDED — whatever the
 * facilitator said before —, an authorization cancelled or expired unused is FAILED (no money can
 * move any more), anything else is looked at again.
 */
const REFUND_OUTCOMES: Record<Finding['kind'], (finding: Finding) => RefundOutcome | undefined> = {
  transfer: (finding) => (finding.kind === 'transfer' ? { status: 'SUCCEEDED', txHash: finding.txHash, blockNumber: finding.blockNumber } : undefined),
  canceled: () => ({ status: 'FAILED', error: 'authorization cancelled on chain: no money moved' }),
  expired: () => ({ status: 'FAILED', error: 'authorization expired unused: no money moved' }),
  valid: () => undefined,
  used_not_found: () => undefined,
};

/** One look at a PENDING refund on the chain (examine.ts), and what it decides. */
async function followUpRefund(
  context: AppContext,
  rails: Pick<Rails, 'chain' | 'explorerTxUrl' | 'network'>,
  refund: RefundRow,
  view: ChainView,
): Promise<RefundRow | undefined> {
  const chain = rails.chain!;
  const finding = await examine(
    context.log,
    chain,
    view,
    {
      asset: refund.asset,
      payer: refund.from_address,
      payTo: refund.to_address,
      value: refund.value,
      nonce: refund.nonce,
      validBefore: refund.valid_before,
      reportedTxHash: refund.tx_hash,
      subject: { refundId: refund.id },
    },
    await searchStart(chain, view, refund.created_at),
  );
  const outcome = REFUND_OUTCOMES[finding.kind](finding);
  if (outcome) return recordRefundOutcome(context, refund, outcome, change(context, rails));
  await recordRefundCheck(context.db, refund.id, {
    nextCheckAt: context.now() + CHECK_EVERY_MS,
    // An unused authorization keeps the note of why it was not settled.
    note: finding.kind === 'valid' ? null : describe(finding),
    now: context.now(),
  });
  return undefined;
}

/** The reconciler's pass over PENDING refunds: each due one is looked at on the chain, until it is decided. */
export async function followUpRefunds(context: AppContext, rails: Rails & { chain: ChainReader }): Promise<number> {
  const due = await findDueRefunds(context.db, rails.mode, context.now(), 100);
  if (due.length === 0) return 0;
  const view = await viewChain(rails.chain, rails.confirmations);
  for (const refund of due) {
    try {
      await followUpRefund(context, rails, refund, view);
    } catch (error) {
      context.metrics.backgroundRowFailures.inc({ pass: 'reconciler' });
      context.log.warn({ err: error, refundId: refund.id }, 'could not reconcile refund yet');
      await recordRefundCheck(context.db, refund.id, { nextCheckAt: context.now() + CHECK_EVERY_MS, note: 'could not read the chain', now: context.now() });
    }
  }
  return due.length;
}
