import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { sendTestEvent } from './deliveries.ts';
import { DeliveryQueued } from './redeliver.route.ts';
import { limitTestEvents } from './test-event-limit.ts';

const doc: RouteDoc = {
  method: 'POST',
  url: '/api/checkout/v2/webhooks/test',
  operationId: 'sendTestWebhook',
  tag: 'Webhooks',
  summary: 'Send a test webhook',
  description:
    "Queues a `webhook.test` event with sample values, signed like every other event, to the webhook URL. At most `TILL_WEBHOOK_TEST_EVENTS_PER_HOUR` (20 by default) per merchant per hour, with the dashboard's test events: past that, 429 with Retry-After.",
  security: 'apiKey',
  scope: 'webhooks:write',
  responses: {
    202: { description: 'Queued', schema: DeliveryQueued },
    401: UNAUTHORIZED_RESPONSE,
    409: { description: 'No webhook URL is set', schema: ErrorResponse },
    429: { description: 'Too many test events for this merchant this hour; Retry-After says when to try again', schema: ErrorResponse },
  },
};

export function registerSendTestEvent(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request, reply) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    await limitTestEvents(context.db, context.config, merchantId, context.now());
    const queued = await sendTestEvent(context.db, mode, merchantId, context.now());
    context.webhookWake.notify();
    return reply.code(202).send(queued);
  });
}
