import type { Tx } from '../db/index.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';

export type PaymentEventType = 'payment.pending' | 'payment.succeeded' | 'payment.failed' | 'payment.reversed';

/**
 * Writes the webhook event of a payment's status change, in the transaction of that change, so the
 * change and its event commit together or not at all. The caller wakes the workers after commit.
 */
export async function recordPaymentEvent(trx: Tx, type: PaymentEventType, paymentId: string, at: { now: number; explorerTxUrl: string }): Promise<void> {
  const payment = await trx.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
  const session = await trx.selectFrom('payment_sessions').selectAll().where('id', '=', payment.session_id).executeTakeFirstOrThrow();
  await enqueueWebhookEvent(trx, { type, session, payment, occurredAt: at.now, explorerTxUrl: at.explorerTxUrl });
}
