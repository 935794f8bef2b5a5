import type { AppContext } from '../context.ts';
import {
  findStalePending,
  findUnfinalized,
  markFinal,
  type PaymentRow,
  recordFailure,
  recordReversal,
  recordSettlement,
  recordTransferLocation,
} from '../payments/payments.ts';
import type { ChainReader } from './chain.ts';
import { sessionResourceUrl } from './challenge.ts';
import type { Facilitator } from './facilitator.ts';
import { findQuote } from './quotes.ts';
import { facilitatorRequest, proofOf } from './settlement.ts';

export type ReconcilerOptions = {
  chain: ChainReader;
  facilitator: Facilitator;
  intervalMs: number;
  /** A PENDING payment younger than this is left to the request that is settling it. */
  graceMs: number;
  /** Blocks on top of a settlement before it counts as final. */
  confirmations: bigint;
};

const BATCH = 50;

/**
 * Resolves payments whose outcome is unknown (a crash, a timeout, a lost answer) from the chain
 * alone: SUCCESS needs the Transfer of that very authorization; FAILED needs its cancellation, or
 * chain time past validBefore without it being used. Never a guess, and never a second charge.
 */
export async function resolvePending(context: AppContext, options: Pick<ReconcilerOptions, 'chain' | 'graceMs'>): Promise<number> {
  const { db, log } = context;
  const pending = await findStalePending(db, context.now() - options.graceMs, BATCH);
  if (pending.length === 0) return 0;
  const head = await options.chain.latestBlock();
  let resolved = 0;
  for (const payment of pending) {
    const auth = authorizationOf(payment);
    try {
      if (await options.chain.isAuthorizationUsed(auth)) {
        const transfer = await options.chain.findTransfer(auth);
        if (!transfer) {
          log.error({ paymentId: payment.id }, 'authorization used on-chain but no matching transfer found; left PENDING for an operator');
          continue;
        }
        if (
          await recordSettlement(context, payment, {
            txHash: transfer.txHash,
            blockNumber: transfer.blockNumber,
            settleResponse: JSON.stringify({ reconciled: true }),
            ...changeAt(context),
          })
        )
          resolved++;
      } else if (await options.chain.isAuthorizationCanceled(auth)) {
        if (await recordFailure(context, payment, 'authorization_canceled', changeAt(context))) resolved++;
      } else if (head.timestamp > payment.valid_before) {
        if (await recordFailure(context, payment, 'authorization_expired', changeAt(context))) resolved++;
      }
    } catch (error) {
      log.warn({ err: error, paymentId: payment.id }, 'could not reconcile payment yet');
    }
  }
  return resolved;
}

/**
 * Re-checks settled payments once their block is final. A transfer removed by a reorg is
 * submitted again while the authorization is still valid; otherwise the payment is REVERSED.
 */
export async function confirmSettled(
  context: AppContext,
  options: Pick<ReconcilerOptions, 'chain' | 'facilitator' | 'confirmations' | 'graceMs'>,
): Promise<number> {
  const { db, log } = context;
  const settled = await findUnfinalized(db, context.now() - options.graceMs, BATCH);
  if (settled.length === 0) return 0;
  const head = await options.chain.latestBlock();
  let changed = 0;
  for (const payment of settled) {
    try {
      const block = await options.chain.transactionBlock(payment.tx_hash!);
      if (block !== undefined) {
        if (head.number - block >= options.confirmations) {
          await markFinal(db, payment.id, block, context.now());
          changed++;
        } else if (payment.block_number !== block) {
          await recordTransferLocation(db, payment.id, { blockNumber: block });
        }
        continue;
      }
      const auth = authorizationOf(payment);
      const elsewhere = (await options.chain.isAuthorizationUsed(auth)) ? await options.chain.findTransfer(auth) : undefined;
      if (elsewhere) {
        await recordTransferLocation(db, payment.id, { txHash: elsewhere.txHash, blockNumber: elsewhere.blockNumber });
        continue;
      }
      if (head.timestamp < payment.valid_before) {
        log.warn({ paymentId: payment.id, txHash: payment.tx_hash }, 'settlement left the canonical chain; submitting the authorization again');
        const quote = await findQuote(db, payment.quote_id);
        const request = facilitatorRequest(proofOf(payment), quote, {
          url: sessionResourceUrl(context.config.baseUrl, payment.session_id),
          description: `payment ${payment.public_order_id}`,
        });
        const response = await options.facilitator.settle(request.payload, request.requirements).catch(() => undefined);
        if (response?.success && response.transaction) {
          await recordTransferLocation(db, payment.id, { txHash: response.transaction, blockNumber: null });
          changed++;
        }
        continue;
      }
      if (await recordReversal(context, payment, changeAt(context))) {
        log.error(
          { paymentId: payment.id, publicOrderId: payment.public_order_id, txHash: payment.tx_hash },
          'settled payment REVERSED: its transfer left the chain and the authorization has expired',
        );
        changed++;
      }
    } catch (error) {
      log.warn({ err: error, paymentId: payment.id }, 'could not confirm settlement yet');
    }
  }
  return changed;
}

function changeAt(context: AppContext) {
  return { now: context.now(), explorerTxUrl: context.config.explorerTxUrl };
}

function authorizationOf(payment: PaymentRow) {
  return { asset: payment.asset, payer: payment.payer, payTo: payment.pay_to, value: payment.value, nonce: payment.nonce };
}

export function startReconciler(context: AppContext, options: ReconcilerOptions): { stop(): Promise<void>; runOnce(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const runOnce = async () => {
    await resolvePending(context, options);
    await confirmSettled(context, options);
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
