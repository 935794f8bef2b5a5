import type { FastifyInstance } from 'fastify';
import type { RailsByMode } from '../chain/rails.ts';
import type { AppContext } from '../context.ts';
import type { ClientMetadataResolver } from '../oauth/client-metadata.ts';
import { registerConsentPages } from './consent/consent.route.ts';
import { registerDashboard } from './dashboard/routes.ts';
import { registerDocsPage } from './docs/docs.route.ts';
import { guardWebScope } from './kit/forms.ts';
import { registerLanding } from './landing/landing.route.ts';
import { registerSignInPages } from './sign-in/sign-in.route.ts';

/**
 * The web scope: the pages for people, in one Fastify plugin that takes form bodies and refuses to
 * register a form post that does not go through the one guard (web/kit/forms.ts). The hosted
 * checkout page (web/checkout/) and the receipt's page (web/receipt/, through payments' E4 route)
 * post no forms and are wired in main.ts.
 */
export const registerWebPages =
  (clients: ClientMetadataResolver, rails: RailsByMode) =>
  (app: FastifyInstance, context: AppContext): void => {
    app.register(async (web) => {
      guardWebScope(web);
      registerLanding(web, context);
      registerDocsPage(web, context);
      registerSignInPages(web, context);
      registerConsentPages(clients)(web, context);
      registerDashboard(web, context, rails);
    });
  };
