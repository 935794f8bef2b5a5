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
import { type Block, blockAtTime, type ChainReader } from './chain.ts';
import { sessionResourceUrl } from './challenge.ts';
import type { Facilitator } from './facilitator.ts';
import { authorizationOf, nextFailedCheck, nextPendingCheck } from './follow-up.ts';
import { findQuote } from './quotes.ts';
import { followUpRefunds } from './refunds.ts';
import { facilitatorRequest, proofOf, reportFacilitatorProblem } from './settlement.ts';

export type ReconcilerOptions = {
  chain: ChainReader;
  facilitator: Facilitator;
  intervalMs: number;
  /** A settled payment younger than this is left to the request that is recording it. */
  graceMs: number;
  /** Blocks on top of a block before what it shows counts: FAILED and final are decided only there. */
  confirmations: bigint;
};

/** Rows looked at per batch, batches per pass, and looks at once. */
const BATCH = 100;
const BATCHES_PER_PASS = 10;
const CONCURRENCY = 8;
/** The search for an authorization's events starts this long (chain time) before the payment was claimed: clocks differ. */
const CLAIM_SKEW_S = 600n;
/** Where the chain stands for one pass: its head, and the block `confirmations` below it that decisions read. */
type ChainView = { head: bigint; pinned: Block; known: Map<bigint, Block> };

/** What one look at a payment found. */
type Finding =
  | { kind: 'transfer'; txHash: string; blockNumber: bigint }
  | { kind: 'canceled' }
  | { kind: 'expired' }
  | { kind: 'valid'; note?: string }
  | { kind: 'used_not_found' };

async function viewChain(options: Pick<ReconcilerOptions, 'chain' | 'confirmations'>): Promise<ChainView> {
  const head = await options.chain.head();
  const pinned = await options.chain.block(head > options.confirmations ? head - options.confirmations : 0n);
  return { head, pinned, known: new Map([[pinned.number, pinned]]) };
}

/** The block the payment's events are searched from: the chain's block when it was claimed, less the clocks' skew. */
async function searchStart(chain: ChainReader, view: ChainView, payment: PaymentRow): Promise<bigint> {
  if (payment.search_from_block !== null) return payment.search_from_block;
  const claimedAt = BigInt(Math.floor(payment.created_at / 1000));
  return blockAtTime(chain, claimedAt > CLAIM_SKEW_S ? claimedAt - CLAIM_SKEW_S : 0n, view.pinned, view.known);
}

/**
 * What the chain says of one authorization, from reads pinned to the view's block (a transaction the
 * facilitator named is checked by its receipt). A transfer needs the transaction that used the
 * authorization and moved exactly its value to payTo; FAILED needs the cancellation, or the pinned
 * block at or past validBefore with the authorization unused.
 */
async function examine(context: AppContext, chain: ChainReader, view: ChainView, payment: PaymentRow, from: bigint): Promise<Finding> {
  const auth = authorizationOf(payment);
  if (payment.reported_tx_hash) {
    const check = await chain.checkTransfer(payment.reported_tx_hash, auth);
    if (check.kind === 'holds') return { kind: 'transfer', txHash: payment.reported_tx_hash, blockNumber: check.blockNumber };
    if (check.kind === 'lacks')
      context.log.error(
        { paymentId: payment.id, txHash: payment.reported_tx_hash },
        "the facilitator named a transaction that does not hold this payment's transfer; resolving it from the chain",
      );
  }
  if (!(await chain.authorizationState(auth, view.pinned.number))) {
    return view.pinned.timestamp >= payment.valid_before ? { kind: 'expired' } : { kind: 'valid' };
  }
  const events = await chain.authorizationEvents(auth, from, view.pinned.number);
  for (const event of events.filter((e) => e.kind === 'used')) {
    const check = await chain.checkTransfer(event.txHash, auth);
    if (check.kind === 'holds') return { kind: 'transfer', txHash: event.txHash, blockNumber: check.blockNumber };
  }
  return events.some((e) => e.kind === 'canceled') ? { kind: 'canceled' } : { kind: 'used_not_found' };
}

function describe(finding: Finding): string {
  switch (finding.kind) {
    case 'transfer':
      return `transfer found in ${finding.txHash} (block ${finding.blockNumber})`;
    case 'canceled':
      return 'authorization cancelled on chain';
    case 'expired':
      return 'authorization unused at validBefore';
    case 'valid':
      return 'authorization unused and still valid';
    case 'used_not_found':
      return 'authorization used, but neither its transfer nor its cancellation found yet';
  }
}

/** Acts on a finding; answers what happened, for the check's record. */
async function act(context: AppContext, options: ReconcilerOptions, payment: PaymentRow, finding: Finding): Promise<string> {
  const change = { now: context.now(), explorerTxUrl: context.config.explorerTxUrl };
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
export async function followUpPayments(context: AppContext, options: ReconcilerOptions): Promise<number> {
  const { db, log } = context;
  let looked = 0;
  for (let batch = 0; batch < BATCHES_PER_PASS; batch++) {
    const due = await findDueFollowUps(db, context.config.mode, context.now(), BATCH);
    if (due.length === 0) break;
    const view = await viewChain(options);
    const checks: Array<{ paymentId: string; check: Parameters<typeof recordCheck>[2] }> = [];
    await eachLimited(due, CONCURRENCY, async (payment) => {
      let finding: string;
      let searchFromBlock: bigint | undefined;
      try {
        searchFromBlock = await searchStart(options.chain, view, payment);
        finding = await act(context, options, payment, await examine(context, options.chain, view, payment, searchFromBlock));
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
  options: Pick<ReconcilerOptions, 'chain' | 'facilitator' | 'confirmations' | 'graceMs'>,
): Promise<number> {
  const { db, log } = context;
  const settled = await findUnfinalized(db, context.config.mode, context.now() - options.graceMs, BATCH);
  if (settled.length === 0) return 0;
  const view = await viewChain(options);
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
  options: Pick<ReconcilerOptions, 'chain' | 'facilitator'>,
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
  const finding = await examine(context, options.chain, view, { ...payment, reported_tx_hash: null }, await searchStart(options.chain, view, payment));
  if (finding.kind === 'transfer') {
    await recordTransferLocation(db, payment.id, { txHash: finding.txHash, blockNumber: finding.blockNumber });
    return true;
  }
  if (finding.kind === 'valid') {
    log.warn({ paymentId: payment.id, txHash: payment.tx_hash }, 'settlement not on the canonical chain; submitting the authorization again');
    const quote = await findQuote(db, payment.quote_id);
    const request = facilitatorRequest(proofOf(payment), quote, {
      url: sessionResourceUrl(context.config.baseUrl, payment.session_id),
      description: `payment ${payment.public_order_id}`,
    });
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
  if (await recordReversal(context, payment, { now: context.now(), explorerTxUrl: context.config.explorerTxUrl })) {
    log.error(
      { paymentId: payment.id, publicOrderId: payment.public_order_id, txHash: payment.tx_hash },
      'settled payment REVERSED: its transfer is not on the chain and the authorization can no longer be used',
    );
    return true;
  }
  return false;
}

export function startReconciler(context: AppContext, options: ReconcilerOptions): { stop(): Promise<void>; runOnce(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const runOnce = async () => {
    await followUpPayments(context, options);
    await confirmSettled(context, options);
    await followUpRefunds(context, options.chain, options.confirmations);
  };
  const tick = () => {
    running = runOnce()
      .catch((error: unknown) => context.log.warn({ err: error }, 'reconciler pass failed'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };
  timer = setTimeout(tick, options.intervalMs);
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
