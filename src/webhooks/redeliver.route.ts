import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { redeliverEvent } from './deliveries.ts';

const Params = z.strictObject({ eventId: z.string().min(1).max(64) });

export const DeliveryQueued = z.object({ eventId: z.string(), deliveryId: z.string() }).meta({ id: 'WebhookDeliveryQueued' });

const doc: RouteDoc = {
  method: 'POST',
  url: '/api/checkout/v2/webhooks/events/{eventId}/redeliver',
  operationId: 'redeliverEvent',
  tag: 'Webhooks',
  summary: 'Redeliver a webhook event',
  description: 'Queues the event again, with the same id and the same body as first sent, to the current webhook URL.',
  security: 'apiKey',
  scope: 'webhooks:write',
  params: Params,
  responses: {
    202: { description: 'Queued', schema: DeliveryQueued },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such event for this merchant', schema: ErrorResponse },
    409: { description: 'No webhook URL is set', schema: ErrorResponse },
  },
};

export function registerRedeliver(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request, reply) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const { eventId } = validate(Params, request.params);
    const { deliveryId } = await redeliverEvent(context.db, mode, eventId, merchantId);
    context.webhookWake.notify();
    return reply.code(202).send({ eventId, deliveryId });
  });
}
