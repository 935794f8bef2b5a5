import type { AppContext } from '../context.ts';
import {
  findDueFollowUps,
  findUnfinalized,
  markFinal,
  type PaymentRow,
  recordCheck,
  recordFailure,
  recordRecovery,
  recordReversal,
  recordSettlement,
  recordTransferLocation,
} from '../payments/payments.ts';
import { sessionResourceUrl } from '../sessions/views.ts';
import { authorizationRequest } from './authorization.ts';
import { type ChainView, describe, examine, type Finding, type FollowedAuthorization, searchStart, viewChain } from './examine.ts';
import { reportFacilitatorProblem } from './facilitator.ts';
import { authorizationOf, nextFailedCheck, nextPendingCheck } from './follow-up.ts';
import type { Rails } from './rails.ts';
import type { ChainReader } from './reader.ts';

// The payments pass of the reconciler: what the chain says of payments the facilitator left
// undecided, and of settled ones until their block is final.

/**
 * One mode's rails (its chain, facilitator, explorer, and `confirmations`: blocks on top of a block
 * before what it shows counts, FAILED and final are decided only there) and the pass's timing.
 */
export type PaymentsPassOptions = Rails & {
  chain: ChainReader;
  intervalMs: number;
  /** A settled payment younger than this is left to the request that is recording it. */
  graceMs: number;
};

/** Rows looked at per batch, batches per pass, and looks at once. */
const BATCH = 100;
const BATCHES_PER_PASS = 10;
const CONCURRENCY = 8;

const followed = (payment: PaymentRow): FollowedAuthorization => ({
  ...authorizationOf(payment),
  validBefore: payment.valid_before,
  reportedTxHash: payment.reported_tx_hash,
  subject: { paymentId: payment.id },
});

/** Acts on a finding; answers what happened, for the check's record. */
async function act(context: AppContext, options: PaymentsPassOptions, payment: PaymentRow, finding: Finding): Promise<string> {
  const change = { now: context.now(), explorerTxUrl: options.explorerTxUrl, network: options.network.v1 };
  const recheckAt = nextFailedCheck(change.now, options.intervalMs, change.now);
  if (payment.status === 'FAILED') {
    if (finding.kind !== 'transfer') return describe(finding);
    const recovered = await recordRecovery(context, payment, { ...change, txHash: finding.txHash, blockNumber: finding.blockNumber });
    if (recovered) {
      context.metrics.x402PaymentsRecovered.inc();
      context.log.error(
        { paymentId: payment.id, publicOrderId: recovered.public_order_id, txHash: finding.txHash },
        'a payment recorded FAILED was settled on chain after all: now SUCCESS',
      );
    }
    return describe(finding);
  }
  switch (finding.kind) {
    case 'transfer':
      await recordSettlement(context, payment, {
        txHash: finding.txHash,
        blockNumber: finding.blockNumber,
        settleResponse: JSON.stringify({ reconciled: true }),
        ...change,
      });
      break;
    case 'canceled':
      await recordFailure(context, payment, 'authorization_canceled', { ...change, recheckAt });
      break;
    case 'expired':
      await recordFailure(context, payment, 'authorization_expired', { ...change, recheckAt });
      break;
    case 'used_not_found':
      context.log.warn({ paymentId: payment.id }, 'authorization used on chain, but neither its transfer nor its cancellation found yet');
      break;
  }
  return describe(finding);
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * Follows payments whose outcome the chain must tell: PENDING ones (a crash, a timeout, a lost or
 * "pending" answer) and FAILED ones due a last look or named in a late answer. Each look moves the
 * row's next look, so every due payment is looked at within ⌈due / BATCH⌉ batches and none holds
 * back another; a row that fails is logged, counted and skipped. Never a guess, never a second charge.
 */
export async function followUpPayments(context: AppContext, options: PaymentsPassOptions): Promise<number> {
  const { db, log } = context;
  let looked = 0;
  for (let batch = 0; batch < BATCHES_PER_PASS; batch++) {
    const due = await findDueFollowUps(db, options.mode, context.now(), BATCH);
    if (due.length === 0) break;
    const view = await viewChain(options.chain, options.confirmations);
    const checks: Array<{ paymentId: string; check: Parameters<typeof recordCheck>[2] }> = [];
    await eachLimited(due, CONCURRENCY, async (payment) => {
      let finding: string;
      let searchFromBlock: bigint | undefined;
      try {
        searchFromBlock = payment.search_from_block ?? (await searchStart(options.chain, view, payment.created_at));
        finding = await act(context, options, payment, await examine(context.log, options.chain, view, followed(payment), searchFromBlock));
      } catch (error) {
        context.metrics.backgroundRowFailures.inc({ pass: 'reconciler' });
        log.warn({ err: error, paymentId: payment.id }, 'could not reconcile payment yet');
        finding = `could not read the chain: ${firstLine(error)}`;
      }
      context.metrics.x402ReconcilerFindings.inc({ finding: finding.split(' ')[0] ?? 'unknown' });
      const now = context.now();
      const nextCheckAt =
        payment.status === 'FAILED' ? nextFailedCheck(payment.updated_at, options.intervalMs, now) : nextPendingCheck(payment, options.intervalMs, now);
      checks.push({ paymentId: payment.id, check: { finding, nextCheckAt, now, searchFromBlock } });
    });
    // A batch's looks are written in one commit (one sync on SQLite); lost in a crash, they are only looked at again.
    await db.transaction().execute(async (trx) => {
      for (const { paymentId, check } of checks) await recordCheck(trx, paymentId, check);
    });
    looked += due.length;
    if (due.length < BATCH) break;
  }
  return looked;
}

/**
 * Re-checks settled payments until their block is final: the recorded transaction must hold this
 * authorization's transfer (not merely have succeeded). A transfer elsewhere is recorded; one removed
 * by a reorg is submitted again while the authorization is still valid; otherwise REVERSED.
 */
export async function confirmSettled(
  context: AppContext,
  options: Pick<PaymentsPassOptions, 'mode' | 'chain' | 'facilitator' | 'confirmations' | 'graceMs' | 'explorerTxUrl' | 'network'>,
): Promise<number> {
  const { db, log } = context;
  const settled = await findUnfinalized(db, options.mode, context.now() - options.graceMs, BATCH);
  if (settled.length === 0) return 0;
  const view = await viewChain(options.chain, options.confirmations);
  let changed = 0;
  for (const payment of settled) {
    let finding = 'finality checked';
    try {
      if (await confirmOne(context, options, view, payment)) changed++;
    } catch (error) {
      context.metrics.backgroundRowFailures.inc({ pass: 'finality' });
      log.warn({ err: error, paymentId: payment.id }, 'could not confirm settlement yet');
      finding = `could not read the chain: ${firstLine(error)}`;
    }
    await recordCheck(db, payment.id, { finding, nextCheckAt: null, now: context.now() });
  }
  return changed;
}

async function confirmOne(
  context: AppContext,
  options: Pick<PaymentsPassOptions, 'chain' | 'facilitator' | 'explorerTxUrl' | 'network'>,
  view: ChainView,
  payment: PaymentRow,
): Promise<boolean> {
  const { db, log } = context;
  const auth = authorizationOf(payment);
  const check = await options.chain.checkTransfer(payment.tx_hash!, auth);
  if (check.kind === 'holds') {
    if (check.blockNumber <= view.pinned.number) {
      await markFinal(db, payment.id, check.blockNumber, context.now());
      return true;
    }
    if (payment.block_number !== check.blockNumber) await recordTransferLocation(db, payment.id, { blockNumber: check.blockNumber });
    return false;
  }
  if (check.kind === 'lacks')
    log.error(
      { paymentId: payment.id, txHash: payment.tx_hash },
      "the recorded transaction does not hold this payment's transfer; resolving it from the chain",
    );
  const from = payment.search_from_block ?? (await searchStart(options.chain, view, payment.created_at));
  const finding = await examine(log, options.chain, view, { ...followed(payment), reportedTxHash: null }, from);
  if (finding.kind === 'transfer') {
    await recordTransferLocation(db, payment.id, { txHash: finding.txHash, blockNumber: finding.blockNumber });
    return true;
  }
  if (finding.kind === 'valid') {
    log.warn({ paymentId: payment.id, txHash: payment.tx_hash }, 'settlement not on the canonical chain; submitting the authorization again');
    const request = authorizationRequest(
      {
        asset: payment.asset,
        from: payment.payer,
        to: payment.pay_to,
        value: payment.value,
        nonce: payment.nonce,
        validAfter: payment.valid_after,
        validBefore: payment.valid_before,
        signature: payment.signature,
      },
      { url: sessionResourceUrl(context.config.baseUrl, payment.session_id), description: `payment ${payment.public_order_id}` },
      options.network,
    );
    const outcome = await options.facilitator.settle(request.payload, request.requirements);
    if (outcome.kind !== 'settled' && outcome.problem)
      reportFacilitatorProblem(context, log, outcome.problem, { sessionId: payment.session_id, paymentId: payment.id });
    if (outcome.kind === 'settled') {
      await recordTransferLocation(db, payment.id, { txHash: outcome.transaction, blockNumber: null });
      return true;
    }
    return false;
  }
  if (finding.kind === 'used_not_found') return false;
  // Expired unused, or cancelled: the merchant was never paid.
  if (await recordReversal(context, payment, { now: context.now(), explorerTxUrl: options.explorerTxUrl, network: options.network.v1 })) {
    log.error(
      { paymentId: payment.id, publicOrderId: payment.public_order_id, txHash: payment.tx_hash },
      'settled payment REVERSED: its transfer is not on the chain and the authorization can no longer be used',
    );
    return true;
  }
  return false;
}
