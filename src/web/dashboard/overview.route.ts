import type { FastifyInstance } from 'fastify';
import { findUser } from '../../accounts/users.ts';
import { type Mode, modeLabel } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { latestWalletChange } from '../../merchants/events.ts';
import { findMerchant, type Merchant } from '../../merchants/merchants.ts';
import { formatMoney } from '../../money/iso4217.ts';
import { formatUsdc } from '../../money/usdc.ts';
import { DAY_MS, latestPaidOrders, type PaidVolume, paidVolume, type RecentOrder } from '../../payments/volume.ts';
import { type WebhookEndpointState, webhookEndpointState } from '../../webhooks/endpoint-state.ts';
import { type Html, html } from '../kit/html.ts';
import { sendPage } from '../kit/page.ts';
import { dailyVolumeChart } from './chart.ts';
import { utcMinute } from './form-controls.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';

/** How many days the volume covers, and how long a wallet change stays on the overview. */
export const VOLUME_DAYS = 30;
export const WALLET_NOTICE_DAYS = 7;
export const LAST_ORDERS = 5;

const payments = (count: number) => `${count} payment${count === 1 ? '' : 's'}`;

function volumeSection(volume: PaidVolume): Html {
  const stat = (label: string, figures: { count: number; usdc: bigint }) =>
    html`<div class="stat"><dt>${label}</dt><dd><strong>${formatUsdc(figures.usdc)} USDC</strong><span class="note">${payments(figures.count)}</span></dd></div>`;
  return html`<section aria-labelledby="volume-heading"><h2 id="volume-heading">Paid volume</h2>
<dl class="stats">${stat('Today (UTC)', volume.today)}${stat(`Last ${VOLUME_DAYS} days`, volume.lastDays)}</dl>
${dailyVolumeChart(volume.daily)}</section>`;
}

function ordersSection(orders: RecentOrder[]): Html {
  if (orders.length === 0)
    return html`<section aria-labelledby="orders-heading"><h2 id="orders-heading">Last orders</h2><p>No paid orders yet. <a href="/dashboard/get-paid">Get paid</a>: create an API key or a payment link.</p></section>`;
  const rows = orders.map(
    (
      order,
    ) => html`<tr><td data-label="Order"><a href="/checkout/v2/orders/receipt/${encodeURIComponent(order.publicOrderId)}"><code>${order.publicOrderId}</code></a></td>
<td data-label="Your reference">${order.orderId ? order.orderId : html`<span class="note">none</span>`}</td>
<td data-label="For">${order.concept ?? ''}</td>
<td data-label="Amount">${formatMoney(order.amountMinor, order.currency)}</td>
<td data-label="Paid">${formatUsdc(order.usdc)} USDC</td>
<td data-label="When"><time datetime="${new Date(order.paidAt).toISOString()}">${utcMinute(order.paidAt)}</time></td></tr>`,
  );
  return html`<section aria-labelledby="orders-heading"><h2 id="orders-heading">Last orders</h2>
<table class="cards"><thead><tr><th scope="col">Order</th><th scope="col">Your reference</th><th scope="col">For</th><th scope="col">Amount</th><th scope="col">Paid</th><th scope="col">When</th></tr></thead><tbody>${rows}</tbody></table>
<p><a href="/dashboard/orders">All paid orders</a></p></section>`;
}

function webhookLine(state: WebhookEndpointState): Html {
  if (!state.configured)
    return html`<li><strong>Webhook endpoint:</strong> not set. <a href="/dashboard/notifications">Set one</a> to hear of every payment on your server.</li>`;
  const where = html`<code>${state.url}</code>`;
  if (state.disabledAt !== null)
    return html`<li class="attention"><strong>Webhook endpoint:</strong> ${where} is <strong>off</strong> since ${utcMinute(state.disabledAt)}${state.disabledReason ? html` (${state.disabledReason})` : ''}. <a href="/dashboard/notifications">Turn it back on</a>.</li>`;
  if (state.failed + state.retrying > 0) {
    const parts = [state.failed ? `${state.failed} failed` : '', state.retrying ? `${state.retrying} being retried` : ''].filter(Boolean).join(' and ');
    return html`<li class="attention"><strong>Webhook endpoint:</strong> ${where}: in the last ${VOLUME_DAYS} days, deliveries ${parts}. <a href="/dashboard/notifications">See the deliveries</a>.</li>`;
  }
  return html`<li><strong>Webhook endpoint:</strong> ${where}, delivering without failures in the last ${VOLUME_DAYS} days.</li>`;
}

function setupSection(mode: Mode, merchant: Merchant, webhook: WebhookEndpointState): Html {
  const address = merchant.wallets[mode];
  const wallet = address
    ? html`<li><strong>Payout wallet:</strong> <code class="address">${address}</code> (<a href="/dashboard/settings">change</a>)</li>`
    : html`<li class="attention"><strong>Payout wallet:</strong> not set, so payments cannot be taken. <a href="/dashboard/settings">Set it in Settings</a>.</li>`;
  const modeLine =
    mode === 'sandbox' ? html`<li><strong>Mode:</strong> test: test keys and test USDC.</li>` : html`<li><strong>Mode:</strong> live: real USDC.</li>`;
  return html`<section aria-labelledby="setup-heading"><h2 id="setup-heading">Setup</h2><ul class="setup">${modeLine}${wallet}${webhookLine(webhook)}</ul></section>`;
}

/** The notice of a recent wallet change: when, by whom, to what, and what to do if it was not you. */
async function walletNotice(context: AppContext, signedIn: DashboardUser, merchantId: string, now: number): Promise<Html> {
  const change = await latestWalletChange(context.db, merchantId, now - WALLET_NOTICE_DAYS * DAY_MS);
  if (!change) return html``;
  const who =
    change.userId === null
      ? 'the operator'
      : change.userId === signedIn.user.id
        ? 'you'
        : ((await findUser(context.db, change.userId))?.email ?? 'a user no longer here');
  const what =
    change.to === null
      ? html`removed on ${utcMinute(change.at)} by ${who}: payments cannot be made until one is set.`
      : html`${change.from ? 'changed' : 'set'} on ${utcMinute(change.at)} by ${who}, to <code class="address">${change.to}</code>.`;
  return html`<p role="status" class="attention wallet-notice">The ${change.mode ? `${modeLabel(change.mode)} ` : ''}payout wallet was ${what} If this was not expected, set the right wallet in <a href="/dashboard/settings">Settings</a> and change your password in <a href="/dashboard/account">Account</a>.</p>`;
}

/** The overview: where the merchant lands after signing in. */
export function registerOverview(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: '/dashboard',
      permission: 'view',
      summary: 'Dashboard overview of the signed-in merchant: paid volume, last orders, wallet and webhook state',
    },
    async (signedIn, _request, reply) => {
      const merchantId = signedIn.user.merchantId;
      const now = context.now();
      const [merchant, volume, orders, webhook, notice] = await Promise.all([
        findMerchant(context.db, merchantId),
        paidVolume(context.db, signedIn.modes.mode, merchantId, now, VOLUME_DAYS),
        latestPaidOrders(context.db, signedIn.modes.mode, merchantId, LAST_ORDERS),
        webhookEndpointState(context.db, signedIn.modes.mode, merchantId, now - VOLUME_DAYS * DAY_MS),
        walletNotice(context, signedIn, merchantId, now),
      ]);
      if (!merchant) return reply.code(404).send();
      return sendPage(
        reply,
        200,
        dashboardPage({
          signedIn,
          section: 'overview',
          heading: merchant.name,
          body: html`${notice}${volumeSection(volume)}${setupSection(signedIn.modes.mode, merchant, webhook)}${ordersSection(orders)}`,
        }),
      );
    },
  );
}
