import type { Selectable } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Db, Tx } from '../db/index.ts';
import type { Mode, RefundsTable } from '../db/schema.ts';
import { queueRefundMails } from '../mail/notices.ts';
import { formatUsdc } from '../money/usdc.ts';
import { findSession } from '../sessions/sessions.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';
import type { ChangeContext, PaymentRow, Store } from './payments.ts';

/**
 * The owner of `refunds`: a merchant's refunds of a payment, from its payout wallet to the payer,
 * and their state machine (PENDING → SUCCEEDED | FAILED), each decision committed with its webhook
 * event. The refunds of a payment that are PENDING or SUCCEEDED never add up to more than it paid.
 */
export type RefundRow = Selectable<RefundsTable>;

/** The authorization a refund is made of, as the payout wallet signed it. */
export type RefundTerms = { value: bigint; reason: string | null; nonce: string; validBefore: bigint; signature: string; nextCheckAt: number };

export type CreateRefundResult = { kind: 'created'; refund: RefundRow } | { kind: 'over'; remaining: bigint } | { kind: 'nonce_used' };

/** USDC base units of a payment's refunds that hold money or may: PENDING and SUCCEEDED. */
export async function refundedValue(db: Db | Tx, paymentId: string): Promise<bigint> {
  const row = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.sum<string | number | bigint | null>('value').as('total'))
    .where('payment_id', '=', paymentId)
    .where('status', 'in', ['PENDING', 'SUCCEEDED'])
    .executeTakeFirst();
  return BigInt(row?.total ?? 0);
}

/**
 * Records a refund if it fits what the payment has left: the sum and the insert in one transaction
 * that holds the payment's row (`FOR UPDATE` on PostgreSQL; on SQLite every write transaction
 * begins IMMEDIATE, one writer at a time), so two refunds at once never add up to more than paid.
 */
export async function createRefund(
  db: Db,
  engine: 'sqlite' | 'postgres',
  payment: PaymentRow,
  terms: RefundTerms,
  now: number,
  /** Written with the refund, in its transaction (the dashboard's line in the activity log). */
  alsoInTransaction?: (trx: Db, refund: RefundRow) => Promise<void>,
): Promise<CreateRefundResult> {
  const refund: RefundRow = {
    id: newId('rf_'),
    mode: payment.mode,
    merchant_id: payment.merchant_id,
    payment_id: payment.id,
    session_id: payment.session_id,
    asset: payment.asset,
    value: terms.value,
    // Its share of the payment in the payment's currency, rounded down (a full refund is the whole amount).
    amount_minor: (payment.amount_minor * terms.value) / payment.value,
    currency: payment.currency,
    reason: terms.reason,
    status: 'PENDING',
    from_address: payment.pay_to.toLowerCase(),
    to_address: payment.payer.toLowerCase(),
    nonce: terms.nonce.toLowerCase(),
    valid_before: terms.validBefore,
    signature: terms.signature,
    tx_hash: null,
    block_number: null,
    last_error: null,
    next_check_at: terms.nextCheckAt,
    created_at: now,
    updated_at: now,
  };
  return db.transaction().execute(async (trx) => {
    const locked = trx.selectFrom('payments').select('id').where('id', '=', payment.id).where('status', '=', 'SUCCESS');
    if (!(await (engine === 'postgres' ? locked.forUpdate() : locked).executeTakeFirst())) return { kind: 'over', remaining: 0n };
    const remaining = payment.value - (await refundedValue(trx, payment.id));
    if (terms.value > remaining) return { kind: 'over', remaining };
    const used = await trx.selectFrom('refunds').select('id').where('nonce', '=', refund.nonce).executeTakeFirst();
    if (used) return { kind: 'nonce_used' };
    await trx.insertInto('refunds').values(refund).execute();
    await alsoInTransaction?.(trx, refund);
    return { kind: 'created', refund };
  });
}

/** The facilitator submitted the refund's transfer: kept PENDING with its transaction until the chain shows it. */
export async function recordRefundSubmitted(db: Db, refundId: string, txHash: string, now: number): Promise<void> {
  await db
    .updateTable('refunds')
    .set({ tx_hash: txHash, updated_at: now, next_check_at: now })
    .where('id', '=', refundId)
    .where('status', '=', 'PENDING')
    .execute();
}

/** A look at a PENDING refund that decided nothing: when to look again, and what stood in the way. */
export async function recordRefundCheck(db: Db, refundId: string, check: { nextCheckAt: number; note: string | null; now: number }): Promise<void> {
  await db
    .updateTable('refunds')
    .set({ next_check_at: check.nextCheckAt, ...(check.note !== null ? { last_error: check.note } : {}) })
    .where('id', '=', refundId)
    .where('status', '=', 'PENDING')
    .execute();
}

export type RefundOutcome = { status: 'SUCCEEDED'; txHash: string; blockNumber: bigint | null } | { status: 'FAILED'; error: string };

/**
 * Decides a PENDING refund, with its webhook event in the same transaction (`refund.succeeded` or
 * `refund.failed`). Conditional on the refund still being PENDING, so only one decision is recorded.
 */
export async function recordRefundOutcome(store: Store, refund: RefundRow, outcome: RefundOutcome, change: ChangeContext): Promise<RefundRow | undefined> {
  const decided = await store.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('refunds')
      .set({
        status: outcome.status,
        updated_at: change.now,
        next_check_at: null,
        ...(outcome.status === 'SUCCEEDED' ? { tx_hash: outcome.txHash, block_number: outcome.blockNumber, last_error: null } : { last_error: outcome.error }),
      })
      .where('id', '=', refund.id)
      .where('status', '=', 'PENDING')
      .returningAll()
      .executeTakeFirst();
    if (!row) return undefined;
    const payment = await trx.selectFrom('payments').selectAll().where('id', '=', row.payment_id).executeTakeFirstOrThrow();
    const session = await findSession(trx, row.session_id);
    if (!session) return { row, queued: false };
    await queueRefundMails(trx, row, { type: `refund.${row.status}`, payment, session, now: change.now, explorerTxUrl: change.explorerTxUrl });
    const { deliveryId } = await enqueueWebhookEvent(trx, {
      type: row.status === 'SUCCEEDED' ? 'refund.succeeded' : 'refund.failed',
      session,
      payment,
      refund: { ...row, tokenAmount: formatUsdc(row.value) },
      occurredAt: change.now,
      explorerTxUrl: change.explorerTxUrl,
      network: change.network,
    });
    return { row, queued: deliveryId !== null };
  });
  if (decided?.queued) store.webhookWake.notify();
  return decided?.row;
}

/** PENDING refunds of `mode` whose look is due, the longest waiting first. */
export async function findDueRefunds(db: Db, mode: Mode, now: number, limit: number): Promise<RefundRow[]> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('mode', '=', mode)
    .where('next_check_at', 'is not', null)
    .where('next_check_at', '<=', now)
    .orderBy('next_check_at')
    .limit(limit)
    .execute();
}
