import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Db, Tx } from '../db/index.ts';
import type { PaymentsTable, SessionStatus } from '../db/schema.ts';
import { wakeWebhookWorkers } from '../webhooks/events.ts';
import { recordPaymentEvent } from './events.ts';

/** When a status change happened, and how its event links the transaction. */
export type ChangeContext = { now: number; explorerTxUrl: string };

export type PaymentRow = Selectable<PaymentsTable>;

/** Public order ids: `TX-` and 128 random bits, unrelated to the session id. */
export function newPublicOrderId(): string {
  return `TX-${randomBytes(16).toString('hex').toUpperCase()}`;
}

export function explorerUrl(template: string, txHash: string): string {
  return template.replace('{hash}', txHash);
}

export async function findPaymentByAuthorization(db: Db, payer: string, nonce: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('payer', '=', payer).where('nonce', '=', nonce).executeTakeFirst();
}

export async function firstSuccessfulPayment(db: Db, sessionId: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).where('status', '=', 'SUCCESS').orderBy('settled_at', 'asc').limit(1).executeTakeFirst();
}

/**
 * Records that a claimed payment settled: the order, the session's state and the webhook event
 * commit together. Conditional on the payment still being PENDING, so the request that settled
 * it and the reconciler can both try and only one records it.
 */
export async function recordSettlement(db: Db, payment: Pick<PaymentRow, 'id' | 'session_id'>, outcome: { txHash: string; blockNumber: bigint | null; settleResponse: string } & ChangeContext): Promise<boolean> {
  return afterCommit(await db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('payments')
      .set({ status: 'SUCCESS', tx_hash: outcome.txHash, block_number: outcome.blockNumber, public_order_id: newPublicOrderId(), settle_response: outcome.settleResponse, settled_at: outcome.now, updated_at: outcome.now })
      .where('id', '=', payment.id)
      .where('status', '=', 'PENDING')
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return false;
    await releaseSession(trx, payment.session_id, outcome.now, true);
    await recordPaymentEvent(trx, 'payment.succeeded', payment.id, outcome);
    return true;
  }));
}

/** Records a payment that the chain shows can never settle. */
export async function recordFailure(db: Db, payment: Pick<PaymentRow, 'id' | 'session_id'>, reason: string, change: ChangeContext): Promise<boolean> {
  const { now } = change;
  return afterCommit(await db.transaction().execute(async (trx) => {
    const updated = await trx.updateTable('payments').set({ status: 'FAILED', failure_reason: reason, updated_at: now }).where('id', '=', payment.id).where('status', '=', 'PENDING').executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return false;
    await releaseSession(trx, payment.session_id, now, false);
    await recordPaymentEvent(trx, 'payment.failed', payment.id, change);
    return true;
  }));
}

async function releaseSession(trx: Tx, sessionId: string, now: number, settled: boolean): Promise<void> {
  await trx
    .updateTable('payment_sessions')
    .set((eb) => ({
      payments_in_progress: eb('payments_in_progress', '-', 1),
      updated_at: now,
      ...(settled ? { status: eb.case().when('order_type', '=', 'TRANSIENT').then(eb.val<SessionStatus>('SUCCESS')).else(eb.ref('status')).end() } : {}),
    }))
    .where('id', '=', sessionId)
    .execute();
}

/** A settled payment whose transfer left the chain for good: the merchant was not paid after all. */
export async function recordReversal(db: Db, payment: Pick<PaymentRow, 'id' | 'session_id'>, change: ChangeContext): Promise<boolean> {
  const { now } = change;
  return afterCommit(await db.transaction().execute(async (trx) => {
    const updated = await trx.updateTable('payments').set({ status: 'REVERSED', failure_reason: 'transfer_reorged_out', updated_at: now }).where('id', '=', payment.id).where('status', '=', 'SUCCESS').executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return false;
    // The merchant was not paid: a TRANSIENT session can be paid again.
    await trx.updateTable('payment_sessions').set({ status: 'OPEN', updated_at: now }).where('id', '=', payment.session_id).where('order_type', '=', 'TRANSIENT').where('status', '=', 'SUCCESS').execute();
    await recordPaymentEvent(trx, 'payment.reversed', payment.id, change);
    return true;
  }));
}

/** Events written by a committed change are delivered at once rather than at the next poll. */
function afterCommit(changed: boolean): boolean {
  if (changed) wakeWebhookWorkers();
  return changed;
}
