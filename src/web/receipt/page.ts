import { type Brand, findBrand } from '../../merchants/brand.ts';
import { formatMoneyNumber } from '../../money/iso4217.ts';
import type { ReceiptPage } from '../../payments/receipt.route.ts';
import type { ReceiptView } from '../../payments/receipts.ts';
import { brandHead, brandLogo } from '../kit/brand.ts';
import { type Html, html } from '../kit/html.ts';
import { page, prefersHtml } from '../kit/page.ts';
import { PAYMENT_STATUS_WORDS } from '../kit/status.ts';
import { readableTime } from '../kit/time.ts';

/** A test payment's receipt says at a glance that no real money moved; a live one never carries it. */
const TEST_BANNER = html`<p class="sandbox-banner" role="note"><strong>Test payment — no real money.</strong> This receipt is of a test-mode payment in a test token worth nothing.</p>`;

/** The merchant's logo and a bar of its accent colour above the receipt; nothing without a brand. */
const brandHeader = (brand: Brand, businessName: string): Html =>
  brand.logo || brand.accentColor ? html`<header class="brand-header">${brandLogo(brand, businessName)}</header>` : html``;

/** What the merchant refunded to the payer, and each refund's transaction. */
const refundRows = (receipt: ReceiptView): Html[] =>
  receipt.refunds.length === 0
    ? []
    : [
        html`<tr><th>Refunded</th><td>${formatMoneyNumber(receipt.refundedAmount, receipt.currency)} (${receipt.refundedTokenAmount} ${receipt.token})</td></tr>`,
        ...receipt.refunds.map(
          (r) =>
            html`<tr><th>Refund transaction</th><td><a href="${r.explorerUrl}" rel="noopener noreferrer"><code>${r.transactionHash}</code></a> (${r.tokenAmount} ${receipt.token})</td></tr>`,
        ),
      ];

function renderReceipt(receipt: ReceiptView, view: { amountText: string; test: boolean; brand: Brand }): Html {
  // Ids, addresses and hashes in monospace; names, amounts and dates in the page's text.
  const id = (value: string): Html => html`<code>${value}</code>`;
  const rows: [string, Html | string][] = [
    ['Order', id(receipt.publicOrderId)],
    ['Status', PAYMENT_STATUS_WORDS[receipt.status]],
    ['Merchant', receipt.merchantName],
    ['Amount', view.amountText],
    ['Paid', `${receipt.tokenAmount} ${receipt.token} on ${receipt.network} (chain ${receipt.chainId})`],
    ['Rate', `${receipt.rate} ${receipt.token} per ${receipt.currency}`],
    ['Payer', id(receipt.payer)],
    ['Paid to', id(receipt.payTo)],
    ['Settled', readableTime(Date.parse(receipt.settledAt))],
    ['Session', id(receipt.paymentSessionId)],
    ...(receipt.orderId ? ([['Merchant reference', id(receipt.orderId)]] as [string, Html][]) : []),
  ];
  const table = rows.map(([k, v]) => html`<tr><th>${k}</th><td>${v}</td></tr>`);
  return page(
    `Receipt ${receipt.publicOrderId}`,
    html`${view.test ? TEST_BANNER : ''}${brandHeader(view.brand, receipt.merchantName)}<h1>Receipt</h1><table class="receipt">${table}<tr><th>Transaction</th><td><a href="${receipt.explorerUrl}" rel="noopener noreferrer"><code>${receipt.transactionHash}</code></a></td></tr>${refundRows(receipt)}</table>`,
    brandHead(view.brand),
  );
}

const notFound = (publicOrderId: string) =>
  page(
    'Receipt not found',
    html`<h1>Receipt not found</h1><p>There is no settled order <code>${publicOrderId}</code>. Check the link you were given; a receipt exists once the payment has settled.</p>`,
  );

/** The receipt's page (E4 for a browser): payments/receipt.route.ts answers JSON to everyone else. */
export const receiptPage: ReceiptPage = async (context, request, reply, found, publicOrderId) => {
  if (!prefersHtml(request.headers.accept)) return false;
  // Decided by the order's own mode: one deployment serves test and live receipts side by side.
  const body = found
    ? renderReceipt(found.receipt, { amountText: found.amountText, test: found.mode === 'sandbox', brand: await findBrand(context.db, found.merchantId) })
    : notFound(publicOrderId);
  reply
    .code(found ? 200 : 404)
    .type('text/html; charset=utf-8')
    .send(String(body));
  return true;
};
