import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { registerFormParser } from '../../http/forms.ts';
import { registerOrders } from './orders.route.ts';
import { registerOverview } from './overview.route.ts';

/** Every dashboard page: each section registers its own routes (and form posts) here. */
export function registerDashboard(app: FastifyInstance, context: AppContext): void {
  app.register(async (pages) => {
    registerFormParser(pages);
    registerOverview(pages, context);
    registerOrders(pages, context);
  });
}
