import type { FastifyInstance } from 'fastify';
import { getAddress } from 'viem';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import { CHAIN_ID, NETWORK_V1, TOKEN_SYMBOL } from '../common/network.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { escapeHtml, page, prefersHtml } from '../http/html.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { decimalNumber, formatMoney } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import { explorerUrl } from './payments.ts';

const Params = z.strictObject({ publicOrderId: z.string().min(1).max(64) });

export const Receipt = z
  .object({
    publicOrderId: z.string(),
    status: z.enum(['SUCCESS', 'REVERSED']),
    paymentSessionId: z.string(),
    orderId: z.string().nullable(),
    merchantName: z.string(),
    amount: z.number(),
    currency: z.string(),
    token: z.literal(TOKEN_SYMBOL),
    tokenAmount: z.string().meta({ description: 'USDC paid, as a decimal string' }),
    rate: z.string().meta({ description: 'USDC per one unit of the currency, as used for this order' }),
    network: z.literal(NETWORK_V1),
    chainId: z.literal(CHAIN_ID),
    payer: z.string(),
    payTo: z.string(),
    transactionHash: z.string(),
    explorerUrl: z.string(),
    settledAt: z.string(),
  })
  .meta({ id: 'OrderReceipt' });

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

type ReceiptView = z.infer<typeof Receipt>;

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
    const id = publicOrderId.toUpperCase().startsWith('TX-') ? `TX-${publicOrderId.slice(3).toUpperCase()}` : `TX-${publicOrderId.toUpperCase()}`;
    const row = await context.db
      .selectFrom('payments')
      .innerJoin('payment_sessions', 'payment_sessions.id', 'payments.session_id')
      .innerJoin('merchants', 'merchants.id', 'payments.merchant_id')
      .select([
        'payments.public_order_id',
        'payments.status',
        'payments.session_id',
        'payments.amount_minor',
        'payments.currency',
        'payments.value',
        'payments.rate',
        'payments.payer',
        'payments.pay_to',
        'payments.tx_hash',
        'payments.settled_at',
        'payment_sessions.order_id',
        'merchants.name',
      ])
      .where('payments.public_order_id', '=', id)
      .where('payments.status', 'in', ['SUCCESS', 'REVERSED'])
      .executeTakeFirst();
    reply.header('vary', 'Accept');
    const html = prefersHtml(request.headers.accept);
    const sandbox = context.config.mode === 'sandbox';
    if (!row?.tx_hash || row.settled_at === null) {
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
    const receipt: ReceiptView = {
      publicOrderId: row.public_order_id!,
      status: row.status as 'SUCCESS' | 'REVERSED',
      paymentSessionId: row.session_id,
      orderId: row.order_id,
      merchantName: row.name,
      amount: decimalNumber(row.amount_minor, row.currency),
      currency: row.currency,
      token: TOKEN_SYMBOL,
      tokenAmount: formatUsdc(row.value),
      rate: row.rate,
      network: NETWORK_V1,
      chainId: CHAIN_ID,
      payer: getAddress(row.payer),
      payTo: getAddress(row.pay_to),
      transactionHash: row.tx_hash,
      explorerUrl: explorerUrl(context.config.explorerTxUrl, row.tx_hash),
      settledAt: new Date(row.settled_at).toISOString(),
    };
    if (html) return reply.type('text/html; charset=utf-8').send(renderReceipt(receipt, { amountText: formatMoney(row.amount_minor, row.currency), sandbox }));
    return receipt;
  });
}
