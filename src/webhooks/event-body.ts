import { z } from 'zod';
import { addWebhookDoc } from '../http/routes.ts';
import { EVENT_TYPE_NAMES } from './event-types.ts';

const url = z.string().nullable();

/** What every delivery of every event carries, as its JSON body (spec part 6). */
export const WebhookEventBody = z
  .object({
    id: z.string().meta({ description: 'The event id (`evt_…`), also the `webhook-id` header: deduplicate by it' }),
    event: z.enum(EVENT_TYPE_NAMES).meta({ description: 'The event type' }),
    timestamp: z.number().int().meta({ description: 'When the status changed, epoch milliseconds' }),
    orderId: z.string().nullable().meta({ description: "The merchant's order id, if the session has one" }),
    amount: z.number().meta({ description: "The amount in `currency` (a refund event's: the refund's)" }),
    currency: z.string().meta({ description: 'ISO 4217 code' }),
    token: z.string().meta({ description: 'The token paid, `USDC`' }),
    successUrl: url,
    failUrl: url,
    cancelUrl: url,
    paymentSessionId: z.string(),
    paymentId: z.string().nullable().meta({ description: 'The order id of the payment (`TX-…`); null for session.expired' }),
    status: z.enum(['PENDING', 'SUCCESS', 'FAILED', 'EXPIRED']),
    chain: z.string().meta({ description: 'The chain, `base` (or `base-sepolia` for test mode there)' }),
    receipts: z.array(z.string()).meta({ description: 'Block-explorer links of the transaction' }),
    refund: z
      .object({
        id: z.string(),
        reason: z.string().nullable(),
        tokenAmount: z.string().meta({ description: 'USDC sent back, as a decimal string' }),
        transactionHash: z.string().nullable(),
        failureReason: z.string().nullable(),
      })
      .optional()
      .meta({ description: 'Refund events only: the refund, whose amount and currency are the body’s' }),
  })
  .meta({ id: 'WebhookEventBody' });

/** The deliveries a merchant's endpoint receives, in the OpenAPI document's `webhooks`. */
export function documentWebhookEvent(app: Parameters<typeof addWebhookDoc>[0]): void {
  addWebhookDoc(app, {
    name: 'event',
    operationId: 'receiveEvent',
    summary: 'An event delivered to the merchant’s webhook endpoint',
    description:
      'POSTed to the endpoint of the session’s mode, signed as Standard Webhooks specify (`webhook-id`, `webhook-timestamp`, `webhook-signature`) and with `X-Webhook-Api-Key`. Answer 2xx; anything else is retried. See docs/api.md.',
    schema: WebhookEventBody,
  });
}
