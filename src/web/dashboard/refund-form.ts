import type { Mode } from '../../common/modes.ts';
import { demoPayoutKey } from '../../merchants/demo-payout-key.ts';
import type { MerchantOrder } from '../../payments/receipts.ts';
import { assetHref } from '../kit/assets.ts';
import { type Html, html } from '../kit/html.ts';
import { csrfInput, dashboardScript } from './page-parts.ts';

const ORDERS_PATH = '/dashboard/orders';

/** Beside an order's status: "Refunded" / "Partially refunded" with the USDC given back, and a link to refund while some is left. */
export function refundPart(order: MerchantOrder): Html {
  const tag =
    order.refundState === 'none'
      ? html``
      : html` <span class="tag tag-opt-in">${order.refundState === 'full' ? 'Refunded' : 'Partially refunded'}</span><br><span class="note">${order.refundedTokenAmount} ${order.token} refunded</span>`;
  const canRefund = order.status === 'SUCCESS' && order.refundableTokenAmount !== '0.00';
  return canRefund ? html`${tag}<br><a href="${ORDERS_PATH}?q=${encodeURIComponent(order.publicOrderId)}#refund">Refund</a>` : tag;
}

const STATUS_WORDS: Record<string, string> = {
  SUCCEEDED: 'sent: the payer has the USDC back',
  PENDING: 'submitted: waiting for the chain to confirm it',
  FAILED: 'failed: no money moved',
};

/**
 * The refund form of one order (shown when Orders is narrowed to it): the amount (the rest, unless
 * changed) and a reason. The dashboard's script connects the payout wallet (EIP-6963), asks for the
 * typed data, has the wallet sign it and posts the refund; without a wallet nothing can be signed.
 * A refusal is shown as every dashboard form shows one: an alert above the fields, and under the
 * field it names, in red, tied to it (`aria-describedby`, `aria-invalid`).
 *
 * `sandboxPayoutKey`: in test mode, when the merchant's test payout wallet is the sandbox demo one,
 * its key (test money only, kept in the data folder): the form then offers a wallet that needs no
 * extension, as the hosted page's sandbox wallet does. Never given in live mode.
 */
export function refundSection(order: MerchantOrder, csrfToken: string, query: Record<string, unknown>, rpcUrl: string, sandboxPayoutKey?: string): Html {
  const refundId = typeof query.refund === 'string' ? query.refund : '';
  const refundStatus = typeof query.refundStatus === 'string' ? query.refundStatus : '';
  const outcome =
    refundId && STATUS_WORDS[refundStatus] ? html`<p role="status" class="note">Refund <code>${refundId}</code> ${STATUS_WORDS[refundStatus]}.</p>` : html``;
  if (order.status !== 'SUCCESS' || order.refundableTokenAmount === '0.00')
    return html`<section id="refund" aria-labelledby="refund-h"><h2 id="refund-h">Refund</h2>${outcome}<p>Nothing is left to refund of this order.</p></section>`;
  const action = `${ORDERS_PATH}/${encodeURIComponent(order.publicOrderId)}/refund`;
  const sandbox = sandboxPayoutKey
    ? html`<p class="sandbox-banner" role="note"><strong>Test mode:</strong> your payout wallet is the sandbox demo wallet, so <strong>Sandbox demo payout wallet</strong> signs with its key from the data folder (test USDC only): no browser wallet is needed.</p>`
    : html``;
  return html`<section id="refund" aria-labelledby="refund-h"><h2 id="refund-h">Refund</h2>${outcome}
<p>A refund is paid by your payout wallet, the one that received this payment, straight to the payer: connect it and sign. It needs no ETH: Till submits the signed transfer. Up to ${order.refundableTokenAmount} ${order.token} is left to refund.</p>${sandbox}
<form method="post" action="${action}" data-refund-prepare="${action}/prepare" data-rpc-url="${rpcUrl}"${sandboxPayoutKey ? html` data-sandbox-payout-key="${sandboxPayoutKey}"` : ''} class="link-form refund-form" novalidate>${csrfInput(csrfToken)}
<p role="alert" class="problem" data-refund-problem hidden></p>
<p class="field"><label for="refund-amount">Amount (USDC)</label><span id="refund-amount-hint" class="note hint">At most ${order.refundableTokenAmount} ${order.token}.</span><input id="refund-amount" name="amount" inputmode="decimal" autocomplete="off" required value="${order.refundableTokenAmount}" aria-describedby="refund-amount-hint"></p>
<p class="field"><label for="refund-reason">Reason <span class="note">(optional, at most 200 characters)</span></label><input id="refund-reason" name="reason" maxlength="200"></p>
<input type="hidden" name="validBefore" value=""><input type="hidden" name="nonce" value=""><input type="hidden" name="signature" value="">
<p class="actions"><button type="submit" disabled>Sign with the payout wallet and refund</button></p>
<p class="note" data-refund-say role="status" aria-live="polite">Signing needs a browser wallet holding the payout wallet.</p>
</form></section>${sandboxPayoutKey ? html`<script src="${assetHref('dashboard-sandbox-wallet.js')}" defer></script>` : ''}${dashboardScript()}`;
}

/**
 * The sandbox demo payout key, for the refund form of `merchant` in `mode`: only in test mode, only
 * when the data folder holds the demo key and it signs for the merchant's test payout wallet.
 */
export function sandboxPayoutKeyFor(dataDir: string, mode: Mode, testPayoutWallet: string | null): string | undefined {
  if (mode !== 'sandbox' || !testPayoutWallet) return undefined;
  const demo = demoPayoutKey(dataDir);
  return demo?.key && demo.wallet?.toLowerCase() === testPayoutWallet.toLowerCase() ? demo.key : undefined;
}
