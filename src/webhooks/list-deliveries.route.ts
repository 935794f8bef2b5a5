import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { listDeliveries } from './deliveries.ts';

const Query = z.strictObject({
  eventId: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
  before: z.iso.datetime().optional().meta({ description: 'Only deliveries created before this time (ISO 8601), to page back' }),
});

const Attempt = z.object({
  attempt: z.number(),
  at: z.string(),
  statusCode: z.number().nullable(),
  error: z.string().nullable(),
  latencyMs: z.number(),
  response: z.string().nullable().meta({ description: 'First 1 KiB of the response body' }),
});

export const WebhookDelivery = z
  .object({
    deliveryId: z.string(),
    eventId: z.string().meta({ description: 'Stable event id, sent as webhook-id and body.id; the same on every retry and redelivery' }),
    event: z.string(),
    paymentSessionId: z.string().nullable(),
    status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']),
    attempts: z.array(Attempt),
    nextAttemptAt: z.string().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

const doc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/webhooks/deliveries',
  operationId: 'listWebhookDeliveries',
  tag: 'Webhooks',
  summary: 'List webhook deliveries',
  description: 'The merchant’s webhook deliveries, newest first, each with every attempt (time, HTTP status, latency, start of the response).',
  security: 'apiKey',
  scope: 'events:read',
  query: Query,
  responses: {
    200: { description: 'Deliveries', schema: z.object({ deliveries: z.array(WebhookDelivery) }) },
    400: { description: 'A query parameter is invalid', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
  },
};

export function registerListDeliveries(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const query = validate(Query, request.query);
    const deliveries = await listDeliveries(context.db, mode, {
      merchantId,
      ...(query.eventId ? { eventId: query.eventId } : {}),
      ...(query.limit ? { limit: query.limit } : {}),
      ...(query.before ? { before: Date.parse(query.before) } : {}),
    });
    return { deliveries: deliveries.map(({ merchantId: _, ...delivery }) => delivery) };
  });
}
