import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.ts';
import { addRoute, type RouteDoc } from '../../http/routes.ts';
import { findBrand } from '../../merchants/brand.ts';
import type { X402Services } from '../../x402/services.ts';
import { sendPage } from '../kit/page.ts';
import { renderCheckout } from './render.ts';
import { checkoutState } from './state.ts';

const Query = z.object({ uid: z.string().min(1).max(64).meta({ description: 'The payment session id (sessionId of E1)' }) });

const doc: RouteDoc = {
  method: 'GET',
  url: '/checkout/pay',
  tag: 'Checkout',
  summary: 'Hosted payment page of a session (redirectUrl)',
  description:
    'Public HTML page where a buyer pays a session with a browser wallet through the x402 endpoint, then returns to the session successUrl with paymentSessionId and publicOrderId added. See docs/checkout.md.',
  security: 'none',
  query: Query,
  responses: {
    200: { description: 'The page: payable, or already paid (shows the receipt)' },
    404: { description: 'Unknown session' },
    410: { description: 'Expired session' },
    422: { description: "No payout wallet configured (the merchant's to fix)" },
    429: { description: 'Too many new quotes for this session from this client, or from every client, in the last minute (Retry-After)' },
    503: { description: 'No fresh exchange rate (Retry-After), or no payment network configured' },
  },
};

/** `GET /checkout/pay?uid=…`. Its stylesheet and scripts are built assets (web/kit/assets.ts). */
export function registerCheckoutPage(services: X402Services | undefined) {
  return (app: FastifyInstance, context: AppContext) => {
    const { config } = context;
    addRoute(app, doc, {}, async (request, reply) => {
      // Only uid is read; a malformed one is simply not a session.
      const parsed = Query.safeParse(request.query);
      const state = parsed.success ? await checkoutState(context, services, parsed.data.uid, request.ip) : ({ kind: 'unknown', status: 404 } as const);
      // The merchant's logo and accent colour, on every page of one of its sessions.
      const branding =
        'session' in state ? { brand: await findBrand(context.db, state.session.merchant_id), businessName: state.session.merchant_name } : undefined;
      // A test session's page says so and offers the sandbox wallet; a live session's never does, whatever else the deployment serves.
      const sandbox = 'session' in state && state.session.mode === 'sandbox';
      const html = await renderCheckout(state, { baseUrl: config.baseUrl, sandbox, ...(branding ? { branding } : {}) }, context.now());
      if (state.kind === 'rate_unavailable' || state.kind === 'busy') reply.header('retry-after', state.kind === 'busy' ? '60' : '30');
      return sendPage(reply, state.status, html);
    });
  };
}
