import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { documentWebhookEvent } from './event-body.ts';
import { registerListDeliveries } from './list-deliveries.route.ts';
import { registerEventRoutes } from './list-events.route.ts';
import { registerRedeliver } from './redeliver.route.ts';
import { registerSendTestEvent } from './test-event.route.ts';
import { registerTriggerEvent } from './trigger-event.route.ts';

export function registerWebhookRoutes(app: FastifyInstance, context: AppContext): void {
  documentWebhookEvent(app);
  registerListDeliveries(app, context);
  registerRedeliver(app, context);
  registerSendTestEvent(app, context);
  registerEventRoutes(app, context);
  registerTriggerEvent(app, context);
}
