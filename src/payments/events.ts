import type { Tx } from '../db/index.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import { enqueueWebhookEvent } from '../webhooks/events.ts';
import type { PaymentRow } from './payments.ts';

export type PaymentEventType = 'payment.pending' | 'payment.succeeded' | 'payment.failed' | 'payment.reversed';

/**
 * Writes the webhook event of a payment's status change, in the transaction of that change, so the
 * change and its event commit together or not at all. `payment` and `session` are the rows as that
 * change left them (read back with RETURNING). True when a delivery was queued, so the caller wakes
 * the workers after commit.
 */
export async function recordPaymentEvent(
  trx: Tx,
  type: PaymentEventType,
  rows: { payment: PaymentRow; session: SessionRow },
  at: { now: number; explorerTxUrl: string },
): Promise<boolean> {
  const { payment, session } = rows;
  const { deliveryId } = await enqueueWebhookEvent(trx, { type, session, payment, occurredAt: at.now, explorerTxUrl: at.explorerTxUrl });
  return deliveryId !== null;
}
