import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { invalidField, TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { decodeCursor, encodeCursor } from '../http/cursor.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate, validateQuery } from '../http/validation.ts';
import { EVENT_RETENTION_DAYS, type EventFilter, findEvent, MAX_EVENTS_PAGE_SIZE, pageOfEvents } from './event-log.ts';
import { EVENT_TYPE_NAMES } from './event-types.ts';

const isTypeList = (value: string) => value.split(',').every((type) => (EVENT_TYPE_NAMES as readonly string[]).includes(type));

export const EventListQuery = z.strictObject({
  type: z
    .string()
    .refine(isTypeList, `must be one or more of ${EVENT_TYPE_NAMES.join(', ')}, comma-separated`)
    .optional()
    .meta({ description: 'Only events of these types, comma-separated (`payment.succeeded,refund.succeeded`)', example: 'payment.succeeded' }),
  createdFrom: z.iso.datetime().optional().meta({ description: 'Only events created at or after this time (ISO 8601, UTC: `2026-01-31T00:00:00Z`)' }),
  createdTo: z.iso.datetime().optional().meta({ description: 'Only events created before this time (ISO 8601, UTC)' }),
  order: z.enum(['newest', 'oldest']).default('newest').meta({ description: '`newest` first (the default) or `oldest` first, as a follower reads them' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_EVENTS_PAGE_SIZE)
    .default(20)
    .meta({ description: `Events a page, 1 to ${MAX_EVENTS_PAGE_SIZE}` }),
  cursor: z.string().min(1).max(200).optional().meta({ description: 'Where the page starts: the `nextCursor` of the page before' }),
});

export const WebhookEvent = z
  .object({
    id: z.string().meta({ description: 'The event id (`evt_…`), sent as `webhook-id` and as the body’s `id`' }),
    type: z.string().meta({ description: 'The event type, as the body’s `event`' }),
    createdAt: z.string().meta({ description: 'When the event was written (ISO 8601); the list is ordered by it' }),
    paymentSessionId: z.string().nullable(),
    body: z.string().meta({
      description: 'The exact body every delivery of this event carried, byte for byte, as a JSON string: parse it to read it, verify or replay it as it is',
    }),
  })
  .meta({ id: 'WebhookEvent' });

const EventList = z
  .object({
    events: z.array(WebhookEvent),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
  })
  .meta({ id: 'WebhookEventList' });

const listDoc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/events',
  operationId: 'listEvents',
  tag: 'Webhooks',
  summary: 'List events',
  description: `The merchant’s webhook events of the credential’s mode (delivered or not, whatever the subscription), newest first or oldest first, filtered by type and creation time, a page at a time: pass \`nextCursor\` as \`cursor\` for the next page. Each event carries the exact body its webhook carried. Events are kept at least ${EVENT_RETENTION_DAYS} days.`,
  security: 'apiKey',
  scope: 'events:read',
  query: EventListQuery,
  responses: {
    200: { description: 'A page of events', schema: EventList },
    400: { description: 'A query parameter is unknown, repeated or invalid; `error.field` names it', schema: ErrorResponse },
    401: UNAUTHORIZED_RESPONSE,
  },
};

const Params = z.strictObject({ eventId: z.string().min(1).max(64) });

const readDoc: RouteDoc = {
  method: 'GET',
  url: '/api/checkout/v2/events/{eventId}',
  operationId: 'getEvent',
  tag: 'Webhooks',
  summary: 'Read an event',
  description: 'One of the merchant’s webhook events of the credential’s mode, with the exact body its webhook carried.',
  security: 'apiKey',
  scope: 'events:read',
  params: Params,
  responses: {
    200: { description: 'The event', schema: WebhookEvent },
    401: UNAUTHORIZED_RESPONSE,
    404: { description: 'No such event of this merchant in this mode', schema: ErrorResponse },
  },
};

/** The filters of a list query, in epoch milliseconds. */
function filterOf(query: z.output<typeof EventListQuery>): EventFilter {
  const createdFrom = query.createdFrom === undefined ? undefined : Date.parse(query.createdFrom);
  const createdTo = query.createdTo === undefined ? undefined : Date.parse(query.createdTo);
  if (createdFrom !== undefined && createdTo !== undefined && createdTo <= createdFrom) throw invalidField('createdTo', 'must be after createdFrom');
  return {
    ...(query.type === undefined ? {} : { types: query.type.split(',') }),
    ...(createdFrom === undefined ? {} : { createdFrom }),
    ...(createdTo === undefined ? {} : { createdTo }),
  };
}

export function registerEventRoutes(app: FastifyInstance, context: AppContext): void {
  addRoute(app, listDoc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const query = validateQuery(EventListQuery, request.query, { type: 'types' });
    const page = await pageOfEvents(context.db, mode, merchantId, filterOf(query), {
      after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
      size: query.limit,
      order: query.order,
    });
    return { events: page.events, nextCursor: page.next ? encodeCursor(page.next) : null };
  });

  addRoute(app, readDoc, {}, async (request) => {
    const { merchantId, mode } = await requireMerchant(context, request);
    const { eventId } = validate(Params, request.params);
    const event = await findEvent(context.db, mode, merchantId, eventId);
    if (!event) throw new TillError('not_found', { what: `Event ${eventId}` });
    return event;
  });
}
