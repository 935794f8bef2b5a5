import { BASE, BASE_SEPOLIA } from '../../common/network.ts';
import { type Brand, findBrand } from '../../merchants/brand.ts';
import { parseDecimalAmount } from '../../money/decimal.ts';
import { currencyExponent, formatMoney, formatMoneyNumber } from '../../money/iso4217.ts';
import type { FoundReceipt, ReceiptPage } from '../../payments/receipt.route.ts';
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

/** The chain by its id, as people name it: "Base", "Base Sepolia" (the API's `base` is for programs). */
const NETWORK_NAMES = new Map([BASE, BASE_SEPOLIA].map((network) => [network.chainId, network.name]));

/** A decimal amount of the receipt in minor units: USDC's 6 decimals, or the currency's. */
const minorUnits = (text: string, exponent: number): bigint => {
  const parsed = parseDecimalAmount(text, exponent, { allowZero: true });
  return parsed.ok ? parsed.minor : 0n;
};
const usdcUnits = (text: string): bigint => minorUnits(text, 6);

/** The receipt's status in words: a paid order refunded in part or in whole says so, not "Paid". */
export function receiptStatus(receipt: ReceiptView): { words: string; tag: string } {
  if (receipt.status === 'REVERSED') return { words: PAYMENT_STATUS_WORDS.REVERSED, tag: 'tag tag-opt-in' };
  const refunded = usdcUnits(receipt.refundedTokenAmount);
  if (refunded === 0n) return { words: PAYMENT_STATUS_WORDS.SUCCESS, tag: 'tag tag-granted' };
  return refunded >= usdcUnits(receipt.tokenAmount) ? { words: 'Refunded', tag: 'tag tag-opt-in' } : { words: 'Partially refunded', tag: 'tag tag-opt-in' };
}

type Row = [string, Html | string];
const rows = (list: (Row | false | null | undefined)[]): Html =>
  html`<table class="receipt-facts">${list.filter((row): row is Row => Boolean(row)).map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`)}</table>`;

/** A transaction hash linked to the explorer: the whole hash, in monospace, wrapping on a phone. */
const transaction = (hash: string, href: string): Html => html`<a href="${href}" rel="noopener noreferrer"><code>${hash}</code></a>`;

/** What the merchant refunded to the payer: the total, what is left paid, and each refund with its transaction. */
function refundsSection(receipt: ReceiptView): Html {
  if (receipt.refunds.length === 0) return html``;
  const exponent = currencyExponent(receipt.currency) ?? 2;
  const left = minorUnits(String(receipt.amount), exponent) - minorUnits(String(receipt.refundedAmount), exponent);
  const list = receipt.refunds.map(
    (refund) =>
      html`<li><p><strong>${formatMoneyNumber(refund.amount, receipt.currency)}</strong> (${refund.tokenAmount} ${receipt.token}) on ${readableTime(Date.parse(refund.refundedAt))}</p><p class="note">Transaction ${refund.explorerUrl ? transaction(refund.transactionHash, refund.explorerUrl) : html`<code>${refund.transactionHash}</code>`}</p></li>`,
  );
  return html`<section aria-labelledby="refunds-h"><h2 id="refunds-h">Refunds</h2>
${rows([
  ['Refunded', `${formatMoneyNumber(receipt.refundedAmount, receipt.currency)} (${receipt.refundedTokenAmount} ${receipt.token})`],
  ['Kept by the merchant', formatMoney(left > 0n ? left : 0n, receipt.currency)],
])}
<ol class="receipt-refunds">${list}</ol></section>`;
}

function renderReceipt(found: NonNullable<FoundReceipt>, brand: Brand): Html {
  const { receipt, amountText, concept } = found;
  const status = receiptStatus(receipt);
  const network = NETWORK_NAMES.get(receipt.chainId) ?? receipt.network;
  const paidAt = readableTime(Date.parse(receipt.settledAt));
  // Ids, addresses and hashes in monospace; names, amounts and dates in the page's text.
  const id = (value: string): Html => html`<code>${value}</code>`;
  const bought = rows([
    ['Merchant', receipt.merchantName],
    concept ? ['For', concept] : null,
    receipt.orderId ? ["Merchant's reference", id(receipt.orderId)] : null,
    ['Amount', amountText],
  ]);
  const payment = rows([
    ['Paid', `${receipt.tokenAmount} ${receipt.token} on ${network}`],
    ['Rate', `${receipt.rate} ${receipt.token} per ${receipt.currency}`],
    ['Date', paidAt],
    ['Transaction', transaction(receipt.transactionHash, receipt.explorerUrl)],
    ['Payer', id(receipt.payer)],
    ['Paid to', id(receipt.payTo)],
    ['Receipt number', id(receipt.publicOrderId)],
    ['Payment session', id(receipt.paymentSessionId)],
  ]);
  return page(
    `Receipt ${receipt.publicOrderId} — ${receipt.merchantName}`,
    html`<main class="receipt">${found.mode === 'sandbox' ? TEST_BANNER : ''}${brandHeader(brand, receipt.merchantName)}
<p class="receipt-merchant">${receipt.merchantName}</p>
<h1>Receipt</h1>
<p class="receipt-total"><span class="receipt-amount">${amountText}</span> <span class="${status.tag}">${status.words}</span></p>
<p class="receipt-when">Paid on ${paidAt}, in ${receipt.token} on ${network}</p>
<section aria-labelledby="bought-h"><h2 id="bought-h">What was bought</h2>${bought}</section>
<section aria-labelledby="payment-h"><h2 id="payment-h">Payment</h2>${payment}</section>
${refundsSection(receipt)}
<p class="note no-print">Keep this receipt: print it or save it as a PDF from your browser's Print menu. Its address stays valid.</p></main>`,
    brandHead(brand),
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
  const body = found ? renderReceipt(found, await findBrand(context.db, found.merchantId)) : notFound(publicOrderId);
  reply
    .code(found ? 200 : 404)
    .type('text/html; charset=utf-8')
    .send(String(body));
  return true;
};
