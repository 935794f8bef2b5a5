import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { TillError } from '../common/errors.ts';
import { explorerTxUrlOf, networkOf } from '../config.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { triggerTestEvent } from './event-log.ts';
import { EVENT_TYPE_NAMES } from './event-types.ts';
import { WebhookEvent } from './list-events.route.ts';
import { limitTestEvents } from './test-event-limit.ts';

const Body = z.strictObject({
  type: z
    .enum(EVENT_TYPE_NAMES, { error: `must be one of ${EVENT_TYPE_NAMES.join(', ')}` })
    .meta({ description: 'The type of the event to make', example: 'payment.succeeded' }),
});

const doc: RouteDoc = {
  method: 'POST',
  url: '/api/checkout/v2/events/test',
  operationId: 'triggerTestEvent',
  tag: 'Webhooks',
  summary: 'Trigger a test event',
  description:
    'Makes a test-mode event of the type with made-up values (fresh fake session, order and payment ids) in the shape of a real one, for trying a receiver: listed by the events API, so `till listen` forwards it, and delivered to the test-mode webhook URL when it is subscribed to the type (`webhook.test` whatever the subscription). Counts against `TILL_WEBHOOK_TEST_EVENTS_PER_HOUR` with the other test events. Test-mode credentials only.',
  security: 'apiKey',
  scope: 'webhooks:write',
  body: Body,
  responses: {
    201: { description: 'The event made', schema: z.object({ event: WebhookEvent, deliveryId: z.string().nullable() }) },
    400: { description: 'The type is not an event type; `error.field` names it', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
    403: { description: 'The credential is a live one', schema: ErrorResponse },
    429: { description: 'Too many test events for this merchant this hour; Retry-After says when to try again', schema: ErrorResponse },
  },
};

export function registerTriggerEvent(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request, reply) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    if (mode !== 'sandbox') throw new TillError('test_mode_only');
    const { type } = validate(Body, request.body);
    await limitTestEvents(context.db, context.config, merchantId, context.now());
    const made = await triggerTestEvent(context.db, merchantId, type, context.now(), {
      explorerTxUrl: explorerTxUrlOf(context.config, mode),
      network: networkOf(context.config, mode).v1,
    });
    if (made.deliveryId) context.webhookWake.notify();
    return reply.code(201).send(made);
  });
}
