import type { FastifyInstance } from 'fastify';
import { findUser } from '../../accounts/users.ts';
import type { SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { escapeHtml, sendPage } from '../../http/html.ts';
import { latestWalletChange } from '../../merchants/events.ts';
import { findMerchant, type Merchant } from '../../merchants/merchants.ts';
import { formatMoney } from '../../money/iso4217.ts';
import { formatUsdc } from '../../money/usdc.ts';
import { DAY_MS, latestPaidOrders, type PaidVolume, paidVolume, type RecentOrder } from '../../payments/volume.ts';
import { type WebhookEndpointState, webhookEndpointState } from '../../webhooks/endpoint-state.ts';
import { dailyVolumeChart } from './chart.ts';
import { utcMinute } from './form-controls.ts';
import { dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';

/** How many days the volume covers, and how long a wallet change stays on the overview. */
export const VOLUME_DAYS = 30;
export const WALLET_NOTICE_DAYS = 7;
export const LAST_ORDERS = 5;

const payments = (count: number) => `${count} payment${count === 1 ? '' : 's'}`;

function volumeSection(volume: PaidVolume): string {
  const stat = (label: string, figures: { count: number; usdc: bigint }) =>
    `<div class="stat"><dt>${label}</dt><dd><strong>${escapeHtml(formatUsdc(figures.usdc))} USDC</strong><span class="note">${payments(figures.count)}</span></dd></div>`;
  return `<section aria-labelledby="volume-heading"><h2 id="volume-heading">Paid volume</h2>
<dl class="stats">${stat('Today (UTC)', volume.today)}${stat(`Last ${VOLUME_DAYS} days`, volume.lastDays)}</dl>
${dailyVolumeChart(volume.daily)}</section>`;
}

function ordersSection(orders: RecentOrder[]): string {
  if (orders.length === 0)
    return '<section aria-labelledby="orders-heading"><h2 id="orders-heading">Last orders</h2><p>No paid orders yet. <a href="/dashboard/get-paid">Get paid</a>: create an API key or a payment link.</p></section>';
  const rows = orders
    .map(
      (
        order,
      ) => `<tr><td data-label="Order"><a href="/checkout/v2/orders/receipt/${encodeURIComponent(order.publicOrderId)}"><code>${escapeHtml(order.publicOrderId)}</code></a></td>
<td data-label="Your reference">${order.orderId ? escapeHtml(order.orderId) : '<span class="note">none</span>'}</td>
<td data-label="Amount">${escapeHtml(formatMoney(order.amountMinor, order.currency))}</td>
<td data-label="Paid">${escapeHtml(formatUsdc(order.usdc))} USDC</td>
<td data-label="When"><time datetime="${new Date(order.paidAt).toISOString()}">${escapeHtml(utcMinute(order.paidAt))}</time></td></tr>`,
    )
    .join('');
  return `<section aria-labelledby="orders-heading"><h2 id="orders-heading">Last orders</h2>
<table class="cards"><thead><tr><th scope="col">Order</th><th scope="col">Your reference</th><th scope="col">Amount</th><th scope="col">Paid</th><th scope="col">When</th></tr></thead><tbody>${rows}</tbody></table>
<p><a href="/dashboard/orders">All paid orders</a></p></section>`;
}

function webhookLine(state: WebhookEndpointState): string {
  if (!state.configured)
    return '<li><strong>Webhook endpoint:</strong> not set. <a href="/dashboard/notifications">Set one</a> to hear of every payment on your server.</li>';
  const where = `<code>${escapeHtml(state.url)}</code>`;
  if (state.disabledAt !== null)
    return `<li class="attention"><strong>Webhook endpoint:</strong> ${where} is <strong>off</strong> since ${escapeHtml(utcMinute(state.disabledAt))}${state.disabledReason ? ` (${escapeHtml(state.disabledReason)})` : ''}. <a href="/dashboard/notifications">Turn it back on</a>.</li>`;
  if (state.failed + state.retrying > 0) {
    const parts = [state.failed ? `${state.failed} failed` : '', state.retrying ? `${state.retrying} being retried` : ''].filter(Boolean).join(' and ');
    return `<li class="attention"><strong>Webhook endpoint:</strong> ${where}: in the last ${VOLUME_DAYS} days, deliveries ${parts}. <a href="/dashboard/notifications">See the deliveries</a>.</li>`;
  }
  return `<li><strong>Webhook endpoint:</strong> ${where}, delivering without failures in the last ${VOLUME_DAYS} days.</li>`;
}

function setupSection(context: AppContext, merchant: Merchant, webhook: WebhookEndpointState): string {
  const wallet = merchant.walletAddress
    ? `<li><strong>Payout wallet:</strong> <code class="address">${escapeHtml(merchant.walletAddress)}</code> (<a href="/dashboard/settings">change</a>)</li>`
    : '<li class="attention"><strong>Payout wallet:</strong> not set, so payments cannot be taken. <a href="/dashboard/settings">Set it in Settings</a>.</li>';
  const mode =
    context.config.mode === 'sandbox'
      ? '<li><strong>Mode:</strong> sandbox: test keys and test USDC.</li>'
      : '<li><strong>Mode:</strong> live: real USDC.</li>';
  return `<section aria-labelledby="setup-heading"><h2 id="setup-heading">Setup</h2><ul class="setup">${mode}${wallet}${webhookLine(webhook)}</ul></section>`;
}

/** The notice of a recent wallet change: when, by whom, to what, and what to do if it was not you. */
async function walletNotice(context: AppContext, signedIn: SignedIn, merchantId: string, now: number): Promise<string> {
  const change = await latestWalletChange(context.db, merchantId, now - WALLET_NOTICE_DAYS * DAY_MS);
  if (!change) return '';
  const who =
    change.userId === null
      ? 'the operator'
      : change.userId === signedIn.user.id
        ? 'you'
        : ((await findUser(context.db, change.userId))?.email ?? 'a user no longer here');
  return `<p role="status" class="attention wallet-notice">The payout wallet was ${change.from ? 'changed' : 'set'} on ${escapeHtml(utcMinute(change.at))} by ${escapeHtml(who)}, to <code class="address">${escapeHtml(change.to)}</code>. If this was not expected, set the right wallet in <a href="/dashboard/settings">Settings</a> and change your password in <a href="/dashboard/account">Account</a>.</p>`;
}

/** The overview: where the merchant lands after signing in. */
export function registerOverview(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    { method: 'GET', url: '/dashboard', summary: 'Dashboard overview of the signed-in merchant: paid volume, last orders, wallet and webhook state' },
    async (signedIn, _request, reply) => {
      const merchantId = signedIn.user.merchantId;
      const now = context.now();
      const [merchant, volume, orders, webhook, notice] = await Promise.all([
        findMerchant(context.db, merchantId),
        paidVolume(context.db, context.config.mode, merchantId, now, VOLUME_DAYS),
        latestPaidOrders(context.db, context.config.mode, merchantId, LAST_ORDERS),
        webhookEndpointState(context.db, context.config.mode, merchantId, now - VOLUME_DAYS * DAY_MS),
        walletNotice(context, signedIn, merchantId, now),
      ]);
      if (!merchant) return reply.code(404).send();
      return sendPage(
        reply,
        200,
        dashboardPage({
          signedIn,
          section: 'overview',
          mode: context.config.mode,
          heading: merchant.name,
          body: notice + volumeSection(volume) + setupSection(context, merchant, webhook) + ordersSection(orders),
        }),
      );
    },
  );
}
