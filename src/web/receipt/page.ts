import type { ReceiptPage } from '../../payments/receipt.route.ts';
import type { ReceiptView } from '../../payments/receipts.ts';
import { type Html, html } from '../kit/html.ts';
import { page, prefersHtml } from '../kit/page.ts';

/** A sandbox page says at a glance that no real money moved. */
const SANDBOX_BANNER = html`<p class="sandbox-banner" role="note"><strong>Sandbox:</strong> test money, not a real payment.</p>`;

function renderReceipt(receipt: ReceiptView, view: { amountText: string; sandbox: boolean }): Html {
  const rows: [string, string][] = [
    ['Order', receipt.publicOrderId],
    ['Status', receipt.status === 'SUCCESS' ? 'Paid' : 'Reversed'],
    ['Merchant', receipt.merchantName],
    ['Amount', view.amountText],
    ['Paid', `${receipt.tokenAmount} ${receipt.token} on ${receipt.network} (chain ${receipt.chainId})`],
    ['Rate', `${receipt.rate} ${receipt.token} per ${receipt.currency}`],
    ['Payer', receipt.payer],
    ['Paid to', receipt.payTo],
    ['Settled', receipt.settledAt],
    ['Session', receipt.paymentSessionId],
    ...(receipt.orderId ? ([['Merchant reference', receipt.orderId]] as [string, string][]) : []),
  ];
  const table = rows.map(([k, v]) => html`<tr><th>${k}</th><td><code>${v}</code></td></tr>`);
  return page(
    `Receipt ${receipt.publicOrderId}`,
    html`${view.sandbox ? SANDBOX_BANNER : ''}<h1>Receipt</h1><table>${table}<tr><th>Transaction</th><td><a href="${receipt.explorerUrl}" rel="noopener noreferrer">${receipt.transactionHash}</a></td></tr></table>`,
  );
}

const notFound = (publicOrderId: string, sandbox: boolean) =>
  page(
    'Receipt not found',
    html`${sandbox ? SANDBOX_BANNER : ''}<h1>Receipt not found</h1><p>There is no settled order <code>${publicOrderId}</code>. Check the link you were given; a receipt exists once the payment has settled.</p>`,
  );

/** The receipt's page (E4 for a browser): payments/receipt.route.ts answers JSON to everyone else. */
export const receiptPage: ReceiptPage = (context, request, reply, found, publicOrderId) => {
  if (!prefersHtml(request.headers.accept)) return undefined;
  const sandbox = context.config.mode === 'sandbox';
  const body = found ? renderReceipt(found.receipt, { amountText: found.amountText, sandbox }) : notFound(publicOrderId, sandbox);
  return reply
    .code(found ? 200 : 404)
    .type('text/html; charset=utf-8')
    .send(String(body));
};
