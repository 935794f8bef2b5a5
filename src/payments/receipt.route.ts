import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { escapeHtml, page, prefersHtml } from '../http/html.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { findReceiptWithAmountText, Receipt, type ReceiptView } from './receipts.ts';

const Params = z.strictObject({ publicOrderId: z.string().min(1).max(64) });

const doc: RouteDoc = {
  method: 'GET',
  url: '/checkout/v2/orders/receipt/{publicOrderId}',
  tag: 'Orders',
  summary: 'Durable receipt of a settled order (E4)',
  description:
    'Public, keyed by the unguessable publicOrderId (with or without the TX- prefix). JSON by default; a readable page when the client asks for text/html.',
  security: 'none',
  params: Params,
  responses: { 200: { description: 'The receipt', schema: Receipt }, 404: { description: 'No such order', schema: ErrorResponse } },
};

/** A sandbox page says at a glance that no real money moved. */
const SANDBOX_BANNER = '<p class="sandbox-banner" role="note"><strong>Sandbox:</strong> test money, not a real payment.</p>';

function renderReceipt(receipt: ReceiptView, view: { amountText: string; sandbox: boolean }): string {
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
  const table = rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td><code>${escapeHtml(v)}</code></td></tr>`).join('');
  return page(
    `Receipt ${receipt.publicOrderId}`,
    `${view.sandbox ? SANDBOX_BANNER : ''}<h1>Receipt</h1><table>${table}<tr><th>Transaction</th><td><a href="${escapeHtml(receipt.explorerUrl)}" rel="noopener noreferrer">${escapeHtml(receipt.transactionHash)}</a></td></tr></table>`,
  );
}

export function registerReceiptRoutes(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, {}, async (request, reply) => {
    const { publicOrderId } = validate(Params, request.params);
    const found = await findReceiptWithAmountText(context.db, publicOrderId, { mode: context.config.mode, explorerTxUrl: context.config.explorerTxUrl });
    reply.header('vary', 'Accept');
    const html = prefersHtml(request.headers.accept);
    const sandbox = context.config.mode === 'sandbox';
    if (!found) {
      if (!html) throw new TillError('not_found', { what: `Order ${publicOrderId}` });
      return reply
        .code(404)
        .type('text/html; charset=utf-8')
        .send(
          page(
            'Receipt not found',
            `${sandbox ? SANDBOX_BANNER : ''}<h1>Receipt not found</h1><p>There is no settled order <code>${escapeHtml(publicOrderId)}</code>. Check the link you were given; a receipt exists once the payment has settled.</p>`,
          ),
        );
    }
    if (html) return reply.type('text/html; charset=utf-8').send(renderReceipt(found.receipt, { amountText: found.amountText, sandbox }));
    return found.receipt;
  });
}
