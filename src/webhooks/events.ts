import type { Selectable } from 'kysely';
import type { z } from 'zod';
import { newId } from '../common/ids.ts';
import { NETWORK_V1, TOKEN_SYMBOL } from '../common/network.ts';
import type { Db } from '../db/index.ts';
import type { PaymentSessionsTable, PaymentsTable } from '../db/schema.ts';
import { decimalNumber } from '../money/iso4217.ts';
import type { WebhookEventBody } from './event-body.ts';
import { TEST_EVENT_TYPE, type WebhookEventType } from './event-types.ts';
import { writeEvent } from './outbox.ts';

const STATUS_OF: Record<WebhookEventType, 'PENDING' | 'SUCCESS' | 'FAILED' | 'EXPIRED'> = {
  'payment.pending': 'PENDING',
  'payment.succeeded': 'SUCCESS',
  'payment.failed': 'FAILED',
  // A payment undone by a chain reorganisation: money not received, in the spec's vocabulary FAILED.
  'payment.reversed': 'FAILED',
  'session.expired': 'EXPIRED',
  'refund.succeeded': 'SUCCESS',
  'refund.failed': 'FAILED',
};

export type WebhookSession = Pick<
  Selectable<PaymentSessionsTable>,
  'id' | 'merchant_id' | 'order_id' | 'amount_minor' | 'currency' | 'success_url' | 'fail_url' | 'cancel_url' | 'mode'
>;
export type WebhookPayment = Pick<Selectable<PaymentsTable>, 'id' | 'amount_minor' | 'currency' | 'public_order_id' | 'tx_hash'>;

/** The body of spec part 6, plus the stable event `id` and the order's `paymentId` (TX-…): the schema the OpenAPI document publishes. */
export type WebhookBody = z.output<typeof WebhookEventBody>;

/** What a refund event tells of its refund: `amount_minor` and `currency` are the refund's share in the payment's currency. */
export type WebhookRefund = {
  id: string;
  amount_minor: bigint;
  currency: string;
  reason: string | null;
  tokenAmount: string;
  tx_hash: string | null;
  last_error: string | null;
};

export type WebhookEventInput = {
  type: WebhookEventType;
  session: WebhookSession;
  /** The payment whose status changed; absent for session.expired. */
  payment?: WebhookPayment;
  /** The refund of a `refund.*` event. */
  refund?: WebhookRefund;
  /** Epoch milliseconds of the status change. */
  occurredAt: number;
  /** Block-explorer URL template with {hash}, of the session's mode's chain. */
  explorerTxUrl: string;
  /** The chain's name in x402 v1 (`base`, or `base-sepolia` for test mode there): the body's `chain`. */
  network: string;
};

export function buildWebhookBody(id: string, input: WebhookEventInput): WebhookBody {
  const { session, payment, refund } = input;
  const amountMinor = refund?.amount_minor ?? payment?.amount_minor ?? session.amount_minor;
  const currency = refund?.currency ?? payment?.currency ?? session.currency;
  const txHash = refund ? refund.tx_hash : payment?.tx_hash;
  return {
    id,
    event: input.type,
    timestamp: input.occurredAt,
    orderId: session.order_id,
    amount: decimalNumber(amountMinor, currency),
    currency,
    token: TOKEN_SYMBOL,
    successUrl: session.success_url,
    failUrl: session.fail_url,
    cancelUrl: session.cancel_url,
    paymentSessionId: session.id,
    paymentId: payment?.public_order_id ?? null,
    status: STATUS_OF[input.type],
    chain: input.network,
    receipts: txHash ? [input.explorerTxUrl.replace('{hash}', txHash)] : [],
    ...(refund
      ? {
          refund: {
            id: refund.id,
            reason: refund.reason,
            tokenAmount: refund.tokenAmount,
            transactionHash: refund.tx_hash,
            failureReason: refund.last_error,
          },
        }
      : {}),
  };
}

/** A `webhook.test` body: sample values in the shape of every other event. */
export function buildTestBody(id: string, now: number): WebhookBody {
  return {
    id,
    event: TEST_EVENT_TYPE,
    timestamp: now,
    orderId: 'test-order',
    amount: 1,
    currency: 'USD',
    token: TOKEN_SYMBOL,
    successUrl: null,
    failUrl: null,
    cancelUrl: null,
    paymentSessionId: 'ps_test',
    paymentId: null,
    status: 'SUCCESS',
    chain: NETWORK_V1,
    receipts: [],
  };
}

/**
 * Writes the event, with its frozen body, and a delivery if the merchant's endpoint of the session's mode is subscribed.
 * Call it inside the transaction that changes the status, and `context.webhookWake.notify()` after the commit.
 */
export async function enqueueWebhookEvent(trx: Db, input: WebhookEventInput): Promise<{ eventId: string; deliveryId: string | null }> {
  const eventId = newId('evt_');
  const body = buildWebhookBody(eventId, input);
  return writeEvent(
    trx,
    {
      eventId,
      merchantId: input.session.merchant_id,
      type: input.type,
      sessionId: input.session.id,
      paymentId: input.payment?.id ?? null,
      body,
      occurredAt: input.occurredAt,
      mode: input.session.mode,
    },
    false,
  );
}
