import { type Selectable, sql } from 'kysely';
import { newId, random16 } from '../common/ids.ts';
import type { AppContext } from '../context.ts';
import { type Db, isUniqueViolation, type Tx } from '../db/index.ts';
import type { Mode, PaymentsTable } from '../db/schema.ts';
import { queuePaymentMails } from '../mail/notices.ts';
import { findSession, finishPayment, markPaidLate, reopenAfterReversal, type SessionRow, startPayment } from '../sessions/sessions.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';

/**
 * The owner of `payments`: every write to the table and the payment state machine
 * (PENDING → SUCCESS | FAILED, SUCCESS → REVERSED), each change committed with the session's
 * bookkeeping and the webhook event in one transaction.
 */
export type PaymentRow = Selectable<PaymentsTable>;

/** When a status change happened, and how its event names the chain (`network`, x402 v1's name) and links the transaction. */
export type ChangeContext = { now: number; explorerTxUrl: string; network: string };

/** Where status changes are written, and whom to wake after a commit that queued deliveries. */
export type Store = Pick<AppContext, 'db' | 'webhookWake'>;

export type PaymentEventType = 'payment.pending' | 'payment.succeeded' | 'payment.failed' | 'payment.reversed';

/**
 * Writes the webhook event of a payment's status change, in the transaction of that change, so the
 * change and its event commit together or not at all. `payment` and `session` are the rows as that
 * change left them (read back with RETURNING). True when a delivery was queued, so the caller wakes
 * the workers after commit.
 */
async function recordPaymentEvent(trx: Tx, type: PaymentEventType, rows: { payment: PaymentRow; session: SessionRow }, at: ChangeContext): Promise<boolean> {
  const { payment, session } = rows;
  const { deliveryId } = await enqueueWebhookEvent(trx, { type, session, payment, occurredAt: at.now, explorerTxUrl: at.explorerTxUrl, network: at.network });
  await queuePaymentMails(trx, { type, payment, session, now: at.now, explorerTxUrl: at.explorerTxUrl });
  return deliveryId !== null;
}

/** Public order ids: `TX-` and 128 random bits, unrelated to the session id. */
export function newPublicOrderId(): string {
  return `TX-${random16().toString('hex').toUpperCase()}`;
}

export function explorerUrl(template: string, txHash: string): string {
  return template.replace('{hash}', txHash);
}

export async function findPaymentByAuthorization(db: Db, payer: string, nonce: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('payer', '=', payer).where('nonce', '=', nonce).executeTakeFirst();
}

/** The payment an x402 payment-identifier named, if any (the unique index of migration 0038). */
export async function findPaymentByIdentifier(db: Db, identifier: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('payment_identifier', '=', identifier).executeTakeFirst();
}

export async function firstSuccessfulPayment(db: Db, sessionId: string): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('status', '=', 'SUCCESS')
    .orderBy('settled_at', 'asc')
    .limit(1)
    .executeTakeFirst();
}

/** What a claim records: the authorization as checked, and the quote it pays. */
export type ClaimTerms = Pick<
  PaymentRow,
  | 'quote_id'
  | 'payer'
  | 'pay_to'
  | 'asset'
  | 'value'
  | 'nonce'
  | 'valid_after'
  | 'valid_before'
  | 'signature'
  | 'amount_minor'
  | 'currency'
  | 'rate'
  | 'payment_identifier'
> & {
  session: SessionRow;
  /** The session version the quote was made for: the claim holds only if the session is still at it. */
  quotedVersion: number;
};

export type ClaimResult =
  | { kind: 'claimed'; payment: PaymentRow }
  | { kind: 'duplicate'; first: PaymentRow }
  | { kind: 'identifier_taken'; first: PaymentRow }
  | { kind: 'session_busy' }
  | { kind: 'session_closed'; session: SessionRow | undefined };

class ClaimRefused extends Error {
  readonly result: ClaimResult;
  constructor(result: ClaimResult) {
    super(result.kind);
    this.result = result;
  }
}

/**
 * Claims the right to settle: the session must still be open, unexpired and unchanged since the
 * quote; the authorization (from, nonce) is claimed once ever, and so is a payment identifier; a
 * TRANSIENT session has at most one payment PENDING or SUCCESS. A loser of any of these is never
 * submitted for settlement.
 */
export async function claimPayment(store: Store, terms: ClaimTerms, change: ChangeContext & { followUpAt: number }): Promise<ClaimResult> {
  const { session, quotedVersion, ...authorization } = terms;
  const { now, followUpAt, ...eventChange } = change;
  const payment: PaymentRow = {
    ...authorization,
    id: newId('pay_'),
    session_id: session.id,
    merchant_id: session.merchant_id,
    status: 'PENDING',
    exclusive: session.order_type === 'TRANSIENT' ? 1 : 0,
    public_order_id: null,
    tx_hash: null,
    block_number: null,
    failure_reason: null,
    settle_response: null,
    created_at: now,
    updated_at: now,
    settled_at: null,
    finalized_at: null,
    next_check_at: followUpAt,
    checks: 0,
    checked_at: null,
    last_finding: null,
    reported_tx_hash: null,
    search_from_block: null,
    // The session's mode, which is the service's: the session was found by a lookup of that mode.
    mode: session.mode,
  };
  try {
    const queued = await store.db.transaction().execute(async (trx) => {
      // The payment row first, then the session row: the same lock order as recording an outcome
      // (payment, then session), so concurrent claims and settlements never deadlock.
      await trx.insertInto('payments').values(payment).execute();
      // The payee is part of the condition: a proof checked against a wallet that has since changed is not claimed.
      const opened = await startPayment(trx, session.id, { quotedVersion, payTo: authorization.pay_to, now });
      // Thrown inside the transaction so the payment row rolls back with it.
      if (!opened) throw new ClaimRefused({ kind: 'session_closed', session: await findSession(trx, session.id) });
      return recordPaymentEvent(trx, 'payment.pending', { payment, session: opened }, { now, ...eventChange });
    });
    if (queued) store.webhookWake.notify();
    return { kind: 'claimed', payment };
  } catch (error) {
    if (error instanceof ClaimRefused) return error.result;
    if (!isUniqueViolation(error)) throw error;
    const first = await findPaymentByAuthorization(store.db, authorization.payer, authorization.nonce);
    if (first) return { kind: 'duplicate', first };
    const named = authorization.payment_identifier === null ? undefined : await findPaymentByIdentifier(store.db, authorization.payment_identifier);
    return named ? { kind: 'identifier_taken', first: named } : { kind: 'session_busy' };
  }
}

/**
 * Records that a claimed payment settled: the order, the session's state and the webhook event
 * commit together. Conditional on the payment still being PENDING, so the request that settled
 * it and the reconciler can both try and only one records it.
 */
export async function recordSettlement(
  store: Store,
  payment: Pick<PaymentRow, 'id' | 'session_id'>,
  outcome: { txHash: string; blockNumber: bigint | null; settleResponse: string } & ChangeContext,
): Promise<PaymentRow | undefined> {
  return changeStatus(store, async (trx) => {
    const settled = await trx
      .updateTable('payments')
      .set({
        status: 'SUCCESS',
        tx_hash: outcome.txHash,
        block_number: outcome.blockNumber,
        public_order_id: newPublicOrderId(),
        settle_response: outcome.settleResponse,
        settled_at: outcome.now,
        updated_at: outcome.now,
        next_check_at: null,
      })
      .where('id', '=', payment.id)
      .where('status', '=', 'PENDING')
      .returningAll()
      .executeTakeFirst();
    if (!settled) return undefined;
    const session = await finishPayment(trx, payment.session_id, outcome.now, true);
    return { row: settled, queued: await recordPaymentEvent(trx, 'payment.succeeded', { payment: settled, session }, outcome) };
  });
}

/** Records a payment that the chain shows can never settle. */
export async function recordFailure(
  store: Store,
  payment: Pick<PaymentRow, 'id' | 'session_id'>,
  reason: string,
  change: ChangeContext & { recheckAt: number | null },
): Promise<PaymentRow | undefined> {
  const { now } = change;
  return changeStatus(store, async (trx) => {
    const failed = await trx
      .updateTable('payments')
      .set({ status: 'FAILED', failure_reason: reason, updated_at: now, next_check_at: change.recheckAt })
      .where('id', '=', payment.id)
      .where('status', '=', 'PENDING')
      .returningAll()
      .executeTakeFirst();
    if (!failed) return undefined;
    const session = await finishPayment(trx, payment.session_id, now, false);
    return { row: failed, queued: await recordPaymentEvent(trx, 'payment.failed', { payment: failed, session }, change) };
  });
}

/**
 * A payment recorded FAILED whose transfer is on chain after all (a reorganisation deeper than the
 * confirmations, or a facilitator's late answer): SUCCESS, with its order and one
 * `payment.succeeded`. The caller logs it as an error; it should never happen.
 */
export async function recordRecovery(
  store: Store,
  payment: Pick<PaymentRow, 'id' | 'session_id'>,
  transfer: { txHash: string; blockNumber: bigint | null } & ChangeContext,
): Promise<PaymentRow | undefined> {
  return changeStatus(store, async (trx) => {
    const recovered = await trx
      .updateTable('payments')
      .set({
        status: 'SUCCESS',
        tx_hash: transfer.txHash,
        block_number: transfer.blockNumber,
        public_order_id: newPublicOrderId(),
        settle_response: JSON.stringify({ reconciled: true, recoveredFromFailure: true }),
        settled_at: transfer.now,
        updated_at: transfer.now,
        next_check_at: null,
        // The money moved: recorded even if a TRANSIENT session was paid again meanwhile (never refused by its one-payment index).
        exclusive: 0,
      })
      .where('id', '=', payment.id)
      .where('status', '=', 'FAILED')
      .returningAll()
      .executeTakeFirst();
    if (!recovered) return undefined;
    const session = await markPaidLate(trx, payment.session_id, transfer.now);
    return { row: recovered, queued: await recordPaymentEvent(trx, 'payment.succeeded', { payment: recovered, session }, transfer) };
  });
}

/**
 * The request's settle attempt ended without a definite success: the reconciler looks at the
 * payment at once rather than after the grace, following the transaction the facilitator named, if
 * any. On a payment already FAILED this asks for a look too: that answer may mean the money moved.
 */
export async function recordSettleAttempt(db: Db, paymentId: string, txHash: string | undefined, now: number): Promise<void> {
  await db
    .updateTable('payments')
    .set({ ...(txHash ? { reported_tx_hash: txHash } : {}), next_check_at: now })
    .where('id', '=', paymentId)
    .where('status', 'in', ['PENDING', 'FAILED'])
    .execute();
}

/** Payments of `mode` the reconciler should look at now: the ones whose turn came longest ago first. */
export async function findDueFollowUps(db: Db, mode: Mode, now: number, limit: number): Promise<PaymentRow[]> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('next_check_at', 'is not', null)
    .where('next_check_at', '<=', now)
    .where('mode', '=', mode)
    .orderBy('next_check_at')
    .limit(limit)
    .execute();
}

/**
 * What one look at a payment found, and when to look next. A payment resolved by that look keeps no
 * next look (its change cleared it); every other look moves it, so no row can hold back another.
 */
export async function recordCheck(
  db: Db | Tx,
  paymentId: string,
  check: { finding: string; nextCheckAt: number | null; now: number; searchFromBlock?: bigint | undefined },
): Promise<void> {
  await db
    .updateTable('payments')
    .set((eb) => ({
      checks: eb('checks', '+', 1),
      checked_at: check.now,
      last_finding: check.finding,
      // A look that resolved the payment cleared its next look; nothing sets it again.
      next_check_at:
        check.nextCheckAt === null ? null : eb.case().when('next_check_at', 'is', null).then(eb.ref('next_check_at')).else(check.nextCheckAt).end(),
      ...(check.searchFromBlock !== undefined ? { search_from_block: check.searchFromBlock } : {}),
    }))
    .where('id', '=', paymentId)
    .execute();
}

/** PENDING payments of `mode`, oldest first, for operators (`till payments pending`). */
export async function listPending(db: Db, modes: readonly Mode[], limit: number): Promise<PaymentRow[]> {
  return db.selectFrom('payments').selectAll().where('status', '=', 'PENDING').where('mode', 'in', modes).orderBy('created_at').limit(limit).execute();
}

/** When the oldest PENDING payment of these modes was claimed, if any. */
export async function oldestPendingSince(db: Db, modes: readonly Mode[]): Promise<number | undefined> {
  const row = await db
    .selectFrom('payments')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', '=', 'PENDING')
    .where('mode', 'in', modes)
    .executeTakeFirst();
  return row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest);
}

/** A settled payment whose transfer left the chain for good: the merchant was not paid after all. */
export async function recordReversal(store: Store, payment: Pick<PaymentRow, 'id' | 'session_id'>, change: ChangeContext): Promise<PaymentRow | undefined> {
  const { now } = change;
  return changeStatus(store, async (trx) => {
    const reversed = await trx
      .updateTable('payments')
      .set({ status: 'REVERSED', failure_reason: 'transfer_reorged_out', updated_at: now })
      .where('id', '=', payment.id)
      .where('status', '=', 'SUCCESS')
      .returningAll()
      .executeTakeFirst();
    if (!reversed) return undefined;
    const session = await reopenAfterReversal(trx, payment.session_id, now);
    return { row: reversed, queued: await recordPaymentEvent(trx, 'payment.reversed', { payment: reversed, session }, change) };
  });
}

/** Runs a status change in one transaction; a delivery it queued is sent at once rather than at the next poll. */
async function changeStatus<T>(store: Store, change: (trx: Tx) => Promise<{ row: T; queued: boolean } | undefined>): Promise<T | undefined> {
  const changed = await store.db.transaction().execute(change);
  if (changed?.queued) store.webhookWake.notify();
  return changed?.row;
}

/**
 * Settled payments of `mode` not yet final, settled before `settledBefore`: the least looked at
 * first (then the oldest), so a payment whose look keeps failing holds back no other.
 */
export async function findUnfinalized(db: Db, mode: Mode, settledBefore: number, limit: number): Promise<PaymentRow[]> {
  return (
    db
      .selectFrom('payments')
      .selectAll()
      // Literals, so both planners can use the partial index payments_unfinalized (a bound parameter would hide the match).
      .where('status', '=', sql.lit('SUCCESS'))
      .where('finalized_at', 'is', null)
      .where('settled_at', '<=', settledBefore)
      .where('mode', '=', mode)
      .orderBy('checks')
      .orderBy('settled_at')
      .limit(limit)
      .execute()
  );
}

/** The settlement's block has enough confirmations: the payment is final. */
export async function markFinal(db: Db, paymentId: string, blockNumber: bigint, now: number): Promise<void> {
  await db.updateTable('payments').set({ finalized_at: now, block_number: blockNumber }).where('id', '=', paymentId).where('status', '=', 'SUCCESS').execute();
}

/** Where the settlement's transfer stands on the chain now (after a reorg it may be another block or transaction). */
export async function recordTransferLocation(db: Db, paymentId: string, location: { txHash?: string; blockNumber: bigint | null }): Promise<void> {
  await db
    .updateTable('payments')
    .set({ ...(location.txHash !== undefined ? { tx_hash: location.txHash } : {}), block_number: location.blockNumber })
    .where('id', '=', paymentId)
    .execute();
}
