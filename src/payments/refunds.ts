import type { Selectable } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Db, Tx } from '../db/index.ts';
import type { Mode, RefundOrigin, RefundStatus, RefundsTable } from '../db/schema.ts';
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

/** Who made a refund: the dashboard, the payment API, or a coding agent's grant (whose limits it counts against). */
export type RefundMaker = { origin: 'dashboard' | 'api' } | { origin: 'mcp'; grantId: string };

/** The limits a merchant set on a coding agent's refunds, USDC base units; null: not set, so none is allowed. */
export type RefundLimits = { perRefund: bigint | null; perDay: bigint | null };

/** Refunds a grant's limits count over: the last 24 hours, rolling. */
export const REFUND_LIMIT_WINDOW_MS = 86_400_000;

/** Which limit a refund of `value` by a grant would go over, with what its refunds of the window already hold; none: within them. */
export type LimitBreach = { limit: 'unset' | 'per_refund' | 'per_day'; limits: RefundLimits; spent: bigint };

export function limitBreach(limits: RefundLimits, spent: bigint, value: bigint): LimitBreach | undefined {
  if (limits.perRefund === null || limits.perDay === null) return { limit: 'unset', limits, spent };
  if (value > limits.perRefund) return { limit: 'per_refund', limits, spent };
  if (spent + value > limits.perDay) return { limit: 'per_day', limits, spent };
  return undefined;
}

/** USDC base units a grant's refunds since `since` give back or may: PENDING and SUCCEEDED. */
export async function grantRefundedSince(db: Db | Tx, grantId: string, since: number): Promise<bigint> {
  const row = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.sum<string | number | bigint | null>('value').as('total'))
    .where('grant_id', '=', grantId)
    .where('created_at', '>', since)
    .where('status', 'in', ['PENDING', 'SUCCEEDED'])
    .executeTakeFirst();
  return BigInt(row?.total ?? 0);
}

export type CreateRefundResult =
  | { kind: 'created'; refund: RefundRow }
  | { kind: 'over'; remaining: bigint }
  | { kind: 'nonce_used' }
  | { kind: 'limit'; breach: LimitBreach };

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
  maker: RefundMaker,
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
    origin: maker.origin,
    grant_id: maker.origin === 'mcp' ? maker.grantId : null,
  };
  return db.transaction().execute(async (trx) => {
    if (maker.origin === 'mcp') {
      // The grant's row is held, its limits read and its window summed in this transaction: an
      // agent's refunds at once take turns, and a limit lowered meanwhile is the one applied.
      const grant = trx
        .selectFrom('oauth_grants')
        .select(['refund_limit_per_refund', 'refund_limit_per_day'])
        .where('id', '=', maker.grantId)
        .where('revoked_at', 'is', null);
      const row = await (engine === 'postgres' ? grant.forUpdate() : grant).executeTakeFirst();
      const limits = { perRefund: row?.refund_limit_per_refund ?? null, perDay: row?.refund_limit_per_day ?? null };
      const breach = limitBreach(limits, await grantRefundedSince(trx, maker.grantId, now - REFUND_LIMIT_WINDOW_MS), terms.value);
      if (breach) return { kind: 'limit', breach };
    }
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

/** A refund as the payment API and the MCP tools show it, with the order id (`TX-…`) of the payment it refunds. */
export type RefundWithOrder = RefundRow & { public_order_id: string | null };

/** The scope refunds are read in: a merchant's, of one mode. */
export type RefundReadScope = { merchantId: string; mode: Mode };

/** One of the merchant's refunds of this mode; another merchant's or mode's is not found. */
export async function findRefund(db: Db, scope: RefundReadScope, refundId: string): Promise<RefundWithOrder | undefined> {
  return db
    .selectFrom('refunds as r')
    .innerJoin('payments as p', 'p.id', 'r.payment_id')
    .selectAll('r')
    .select('p.public_order_id')
    .where('r.id', '=', refundId)
    .where('r.merchant_id', '=', scope.merchantId)
    .where('r.mode', '=', scope.mode)
    .executeTakeFirst();
}

export type RefundFilter = { publicOrderId?: string; sessionId?: string; status?: RefundStatus[]; origin?: RefundOrigin };
export type RefundsCursor = { createdAt: number; id: string };

/** The merchant's refunds of this mode, newest first, filtered, one page after `after` (keyset paging; `next` absent on the last page). */
export async function pageOfRefunds(
  db: Db,
  scope: RefundReadScope,
  filter: RefundFilter,
  paging: { after?: RefundsCursor; size: number },
): Promise<{ refunds: RefundWithOrder[]; next: RefundsCursor | undefined }> {
  const rows = await db
    .selectFrom('refunds as r')
    .innerJoin('payments as p', 'p.id', 'r.payment_id')
    .selectAll('r')
    .select('p.public_order_id')
    .where('r.merchant_id', '=', scope.merchantId)
    .where('r.mode', '=', scope.mode)
    .$if(filter.publicOrderId !== undefined, (qb) => qb.where('p.public_order_id', '=', filter.publicOrderId!))
    .$if(filter.sessionId !== undefined, (qb) => qb.where('r.session_id', '=', filter.sessionId!))
    .$if(filter.status !== undefined, (qb) => qb.where('r.status', 'in', filter.status!))
    .$if(filter.origin !== undefined, (qb) => qb.where('r.origin', '=', filter.origin!))
    .$if(paging.after !== undefined, (qb) =>
      qb.where((eb) => eb(eb.refTuple('r.created_at', 'r.id'), '<', eb.tuple(paging.after!.createdAt, paging.after!.id))),
    )
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id', 'desc')
    .limit(paging.size + 1)
    .execute();
  const refunds = rows.slice(0, paging.size);
  const last = refunds.at(-1);
  return { refunds, next: rows.length > paging.size && last ? { createdAt: last.created_at, id: last.id } : undefined };
}
