import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { escapeHtml, sendPage } from '../../http/html.ts';
import { addRoute } from '../../http/routes.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { signedInOrRedirect } from './guard.ts';
import { dashboardPage, SECTIONS } from './layout.ts';

export const DASHBOARD_TAG = 'Dashboard';
export const HTML_RESPONSE = { description: 'An HTML page' };
export const SIGN_IN_REDIRECT = { description: 'Not signed in: on to the sign-in page' };

/** The overview: where the merchant lands after signing in. */
export function registerOverview(app: FastifyInstance, context: AppContext): void {
  addRoute(
    app,
    {
      method: 'GET',
      url: '/dashboard',
      summary: 'Dashboard overview of the signed-in merchant',
      tag: DASHBOARD_TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 303: SIGN_IN_REDIRECT },
    },
    {},
    async (request, reply) => {
      const signedIn = await signedInOrRedirect(context, request, reply);
      if (!signedIn) return reply;
      const merchant = await findMerchant(context.db, signedIn.user.merchantId);
      const sections = SECTIONS.filter((s) => s.id !== 'overview')
        .map((s) => `<li><a href="${s.path}">${escapeHtml(s.label)}</a></li>`)
        .join('');
      return sendPage(
        reply,
        200,
        dashboardPage({
          signedIn,
          section: 'overview',
          mode: context.config.mode,
          heading: merchant?.name ?? 'Overview',
          body: `<p>Wallet: ${merchant?.walletAddress ? 'set' : '<strong>not set</strong> — payments cannot be taken until it is.'}</p><ul>${sections}</ul>`,
        }),
      );
    },
  );
}
