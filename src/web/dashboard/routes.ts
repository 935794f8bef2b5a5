import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { registerFormParser } from '../../http/forms.ts';
import { registerDevelopers } from './developers.route.ts';
import { registerNotifications } from './notifications.route.ts';
import { registerOrders } from './orders.route.ts';
import { registerOverview } from './overview.route.ts';

/** Every dashboard page: each section registers its own routes (and form posts) here. */
export function registerDashboard(app: FastifyInstance, context: AppContext): void {
  app.register(async (pages) => {
    registerFormParser(pages);
    // A browser sends `Origin: null` on form posts from a no-referrer page; same-origin keeps the Origin check meaningful.
    pages.addHook('onRequest', async (_request, reply) => void reply.header('referrer-policy', 'same-origin'));
    registerOverview(pages, context);
    registerOrders(pages, context);
    registerDevelopers(pages, context);
    registerNotifications(pages, context);
  });
}
