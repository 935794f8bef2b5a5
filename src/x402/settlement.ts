import { setTimeout as sleep } from 'node:timers/promises';
import { getAddress } from 'viem';
import type { PaymentPayload } from '@x402/core/types';
import { encodePaymentResponseHeader } from '@x402/core/http';
import type { Db } from '../db/index.ts';
import type { AppContext } from '../context.ts';
import { isUniqueViolation } from '../db/index.ts';
import { newId } from '../common/ids.ts';
import { explorerUrl, findPaymentByAuthorization, recordSettlement, type ChangeContext, type PaymentRow, type Store } from '../payments/payments.ts';
import { recordPaymentEvent } from '../payments/events.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { v2Requirements } from './challenge.ts';
import type { Facilitator } from './facilitator.ts';
import type { Proof } from './payload.ts';
import { NETWORK_V1, NETWORK_V2, X402_VERSION } from './protocol.ts';
import type { Quote } from './quotes.ts';

/** The facilitator is handed the payload and requirements rebuilt from our stored quote, in v2. */
export function facilitatorRequest(proof: Proof, quote: Quote, resource: { url: string; description: string }) {
  const requirements = v2Requirements({ payTo: getAddress(quote.pay_to), asset: getAddress(quote.asset), usdcAmount: quote.usdc_amount });
  const payload: PaymentPayload = {
    x402Version: X402_VERSION,
    resource: { ...resource, mimeType: 'application/json' },
    accepted: requirements,
    payload: {
      signature: proof.signature,
      authorization: {
        from: getAddress(proof.from),
        to: getAddress(proof.to),
        value: proof.value.toString(),
        validAfter: proof.validAfter.toString(),
        validBefore: proof.validBefore.toString(),
        nonce: proof.nonce,
      },
    },
  };
  return { payload, requirements };
}

/** Rebuilds the stored proof of a payment, for the reconciler's re-submission. */
export function proofOf(payment: PaymentRow): Proof {
  return {
    scheme: 'exact',
    network: NETWORK_V2,
    asset: payment.asset,
    resource: undefined,
    signature: payment.signature as `0x${string}`,
    from: payment.payer as `0x${string}`,
    to: payment.pay_to as `0x${string}`,
    value: payment.value,
    validAfter: payment.valid_after,
    validBefore: payment.valid_before,
    nonce: payment.nonce as `0x${string}`,
  };
}

export type PaidResponse = { body: Record<string, unknown>; headers: Record<string, string> };

/** The 200 of spec E3 for a settled payment, the same every time it is asked for. */
export function paidResponse(payment: PaymentRow, explorerTxUrl: string): PaidResponse {
  const txHash = payment.tx_hash ?? '';
  const settle = (network: string) => encodePaymentResponseHeader({ success: true, transaction: txHash, network: network as `${string}:${string}`, payer: getAddress(payment.payer) });
  return {
    body: {
      status: 'SUCCESS',
      paymentSessionId: payment.session_id,
      payTo: getAddress(payment.pay_to),
      receipt: explorerUrl(explorerTxUrl, txHash),
      paymentId: payment.public_order_id,
    },
    headers: { 'x-payment-response': settle(NETWORK_V1), 'payment-response': settle(NETWORK_V2) },
  };
}

export type ClaimResult =
  | { kind: 'claimed'; payment: PaymentRow }
  | { kind: 'duplicate'; first: PaymentRow }
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
 * quote; the authorization (from, nonce) is claimed once ever; a TRANSIENT session has at most one
 * payment PENDING or SUCCESS. A loser of any of these is never submitted for settlement.
 */
export async function claimPayment(store: Store, input: { session: SessionRow; quote: Quote; proof: Proof } & ChangeContext): Promise<ClaimResult> {
  const { session, quote, proof, now } = input;
  const payment: PaymentRow = {
    id: newId('pay_'),
    session_id: session.id,
    merchant_id: session.merchant_id,
    quote_id: quote.id,
    status: 'PENDING',
    exclusive: session.order_type === 'TRANSIENT' ? 1 : 0,
    payer: proof.from,
    pay_to: quote.pay_to.toLowerCase(),
    asset: quote.asset.toLowerCase(),
    value: proof.value,
    nonce: proof.nonce,
    valid_after: proof.validAfter,
    valid_before: proof.validBefore,
    signature: proof.signature,
    amount_minor: quote.amount_minor,
    currency: quote.currency,
    rate: quote.rate,
    public_order_id: null,
    tx_hash: null,
    block_number: null,
    failure_reason: null,
    settle_response: null,
    created_at: now,
    updated_at: now,
    settled_at: null,
    finalized_at: null,
  };
  try {
    const queued = await store.db.transaction().execute(async (trx) => {
      // The payment row first, then the session row: the same lock order as recording an outcome
      // (payment, then session), so concurrent claims and settlements never deadlock.
      await trx.insertInto('payments').values(payment).execute();
      const opened = await trx
        .updateTable('payment_sessions')
        .set((eb) => ({ payments_in_progress: eb('payments_in_progress', '+', 1) }))
        .where('id', '=', session.id)
        .where('status', '=', 'OPEN')
        .where('version', '=', quote.session_version)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .returningAll()
        .executeTakeFirst();
      if (!opened) {
        // Thrown inside the transaction so the payment row rolls back with it.
        throw new ClaimRefused({ kind: 'session_closed', session: await trx.selectFrom('payment_sessions').selectAll().where('id', '=', session.id).executeTakeFirst() });
      }
      return recordPaymentEvent(trx, 'payment.pending', { payment, session: opened }, input);
    });
    if (queued) store.webhookWake.notify();
    return { kind: 'claimed', payment };
  } catch (error) {
    if (error instanceof ClaimRefused) return error.result;
    if (!isUniqueViolation(error)) throw error;
    const first = await findPaymentByAuthorization(store.db, proof.from, proof.nonce);
    return first ? { kind: 'duplicate', first } : { kind: 'session_busy' };
  }
}

export type SettleOutcome = { kind: 'settled'; payment: PaymentRow } | { kind: 'refused'; reason: string; message: string } | { kind: 'unknown' };

/**
 * Settles a claimed payment outside any transaction. Only an answer from the facilitator moves
 * the payment on; a refused settlement or a lost answer leaves it PENDING for the reconciler,
 * which resolves it from the chain alone.
 */
export async function settleClaimed(context: Pick<AppContext, 'db' | 'webhookWake' | 'now' | 'config' | 'faultHook'>, facilitator: Facilitator, claimed: PaymentRow, request: ReturnType<typeof facilitatorRequest>): Promise<SettleOutcome> {
  const { db } = context;
  await context.faultHook?.('x402:after-claim');
  let response;
  try {
    response = await facilitator.settle(request.payload, request.requirements);
  } catch {
    return { kind: 'unknown' };
  }
  if (!response.success || !response.transaction) {
    return { kind: 'refused', reason: response.errorReason ?? 'settlement_failed', message: response.errorMessage ?? 'The facilitator could not settle the payment' };
  }
  await context.faultHook?.('x402:after-settle');
  const recorded = await recordSettlement(context, claimed, { txHash: response.transaction, blockNumber: null, settleResponse: JSON.stringify(response), now: context.now(), explorerTxUrl: context.config.explorerTxUrl });
  // Not recorded here: the reconciler got there first; the payment's own row says how it ended.
  const settled = recorded ?? (await findPaymentByAuthorization(db, claimed.payer, claimed.nonce));
  return settled?.status === 'SUCCESS' ? { kind: 'settled', payment: settled } : { kind: 'unknown' };
}

/** A duplicate of a proof being settled waits for the first (up to `timeoutMs`) and gets its outcome. */
export async function waitForOutcome(db: Db, payer: string, nonce: string, timeoutMs: number): Promise<PaymentRow | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const payment = await findPaymentByAuthorization(db, payer, nonce);
    if (!payment || payment.status !== 'PENDING' || Date.now() >= deadline) return payment;
    await sleep(100);
  }
}
