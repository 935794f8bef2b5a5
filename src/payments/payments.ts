import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { AppContext } from '../context.ts';
import type { Db, Tx } from '../db/index.ts';
import type { PaymentsTable, SessionStatus } from '../db/schema.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { recordPaymentEvent } from './events.ts';

/** When a status change happened, and how its event links the transaction. */
export type ChangeContext = { now: number; explorerTxUrl: string };

/** Where status changes are written, and whom to wake after a commit that queued deliveries. */
export type Store = Pick<AppContext, 'db' | 'webhookWake'>;

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
export async function recordSettlement(store: Store, payment: Pick<PaymentRow, 'id' | 'session_id'>, outcome: { txHash: string; blockNumber: bigint | null; settleResponse: string } & ChangeContext): Promise<PaymentRow | undefined> {
  return changeStatus(store, async (trx) => {
    const settled = await trx
      .updateTable('payments')
      .set({ status: 'SUCCESS', tx_hash: outcome.txHash, block_number: outcome.blockNumber, public_order_id: newPublicOrderId(), settle_response: outcome.settleResponse, settled_at: outcome.now, updated_at: outcome.now })
      .where('id', '=', payment.id)
      .where('status', '=', 'PENDING')
      .returningAll()
      .executeTakeFirst();
    if (!settled) return undefined;
    const session = await releaseSession(trx, payment.session_id, outcome.now, true);
    return { row: settled, queued: await recordPaymentEvent(trx, 'payment.succeeded', { payment: settled, session }, outcome) };
  });
}

/** Records a payment that the chain shows can never settle. */
export async function recordFailure(store: Store, payment: Pick<PaymentRow, 'id' | 'session_id'>, reason: string, change: ChangeContext): Promise<PaymentRow | undefined> {
  const { now } = change;
  return changeStatus(store, async (trx) => {
    const failed = await trx.updateTable('payments').set({ status: 'FAILED', failure_reason: reason, updated_at: now }).where('id', '=', payment.id).where('status', '=', 'PENDING').returningAll().executeTakeFirst();
    if (!failed) return undefined;
    const session = await releaseSession(trx, payment.session_id, now, false);
    return { row: failed, queued: await recordPaymentEvent(trx, 'payment.failed', { payment: failed, session }, change) };
  });
}

async function releaseSession(trx: Tx, sessionId: string, now: number, settled: boolean): Promise<SessionRow> {
  return trx
    .updateTable('payment_sessions')
    .set((eb) => ({
      payments_in_progress: eb('payments_in_progress', '-', 1),
      updated_at: now,
      ...(settled ? { status: eb.case().when('order_type', '=', 'TRANSIENT').then(eb.val<SessionStatus>('SUCCESS')).else(eb.ref('status')).end() } : {}),
    }))
    .where('id', '=', sessionId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A settled payment whose transfer left the chain for good: the merchant was not paid after all. */
export async function recordReversal(store: Store, payment: Pick<PaymentRow, 'id' | 'session_id'>, change: ChangeContext): Promise<PaymentRow | undefined> {
  const { now } = change;
  return changeStatus(store, async (trx) => {
    const reversed = await trx.updateTable('payments').set({ status: 'REVERSED', failure_reason: 'transfer_reorged_out', updated_at: now }).where('id', '=', payment.id).where('status', '=', 'SUCCESS').returningAll().executeTakeFirst();
    if (!reversed) return undefined;
    // The merchant was not paid: a TRANSIENT session can be paid again.
    const reopened = await trx.updateTable('payment_sessions').set({ status: 'OPEN', updated_at: now }).where('id', '=', payment.session_id).where('order_type', '=', 'TRANSIENT').where('status', '=', 'SUCCESS').returningAll().executeTakeFirst();
    const session = reopened ?? (await trx.selectFrom('payment_sessions').selectAll().where('id', '=', payment.session_id).executeTakeFirstOrThrow());
    return { row: reversed, queued: await recordPaymentEvent(trx, 'payment.reversed', { payment: reversed, session }, change) };
  });
}

/** Runs a status change in one transaction; a delivery it queued is sent at once rather than at the next poll. */
async function changeStatus<T>(store: Store, change: (trx: Tx) => Promise<{ row: T; queued: boolean } | undefined>): Promise<T | undefined> {
  const changed = await store.db.transaction().execute(change);
  if (changed?.queued) store.webhookWake.notify();
  return changed?.row;
}
