import type { FastifyInstance } from 'fastify';
import type { RailsByMode } from '../../chain/rails.ts';
import type { AppContext } from '../../context.ts';
import { registerAccount } from './account.route.ts';
import { registerActivity } from './activity.route.ts';
import { registerDevelopers } from './developers.route.ts';
import { registerGetPaid } from './get-paid.route.ts';
import { registerLinks } from './links.route.ts';
import { registerModeSwitch } from './mode-switch.route.ts';
import { registerNotifications } from './notifications.route.ts';
import { registerOrders } from './orders.route.ts';
import { registerOverview } from './overview.route.ts';
import { registerRefunds } from './refunds.route.ts';
import { registerSettings } from './settings.route.ts';
import { registerTeam } from './team.route.ts';
import { registerTwoFactor } from './two-factor.route.ts';

/** Every dashboard page: each section registers its own routes (and form posts, through the web scope's guard) here. */
export function registerDashboard(app: FastifyInstance, context: AppContext, rails: RailsByMode): void {
  app.register(async (pages) => {
    // With the service-wide no-referrer, browsers send `Origin: null` on form posts and guard.ts's
    // Origin check refuses them; same-origin still sends nothing to other sites.
    pages.addHook('onRequest', async (_request, reply) => void reply.header('referrer-policy', 'same-origin'));
    registerOverview(pages, context);
    registerModeSwitch(pages, context);
    registerSettings(pages, context);
    registerAccount(pages, context);
    registerTwoFactor(pages, context);
    registerGetPaid(pages, context);
    registerLinks(pages, context);
    registerOrders(pages, context);
    registerRefunds(pages, context, rails);
    registerDevelopers(pages, context);
    registerNotifications(pages, context);
    registerTeam(pages, context);
    registerActivity(pages, context);
  });
}
