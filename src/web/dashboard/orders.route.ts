import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Mode } from '../../common/modes.ts';
import { explorerTxUrlOf, walletRpcUrlOf } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { explorerUrl } from '../../payments/payments.ts';
import { cursorText, type MerchantOrder, type OrderFilter, type OrdersCursor, parseCursor, searchOrders } from '../../payments/receipts.ts';
import { listRefusedAttempts } from '../../x402/attempts.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { sendPage } from '../kit/page.ts';
import { paymentStatusTag } from '../kit/status.ts';
import { refusedAttemptsSection } from './attempts.ts';
import { toCsvLine } from './csv.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';
import { refundPart, refundSection, sandboxPayoutKeyFor } from './refund-form.ts';
import { cursorPager, FILTER_REFUSED, moment } from './views.ts';

const PATH = '/dashboard/orders';
export const ORDERS_PAGE_SIZE = 50;
const CSV_SLICE = 1000;
const DAY_MS = 86_400_000;

/** The filter as the form sends it (every field a string, empty when unset). */
type FilterForm = { status: string; from: string; to: string; session: string; q: string };

type ParsedFilter = { filter: OrderFilter; after: OrdersCursor | undefined; form: FilterForm; problems: { field: string; label: string; message: string }[] };

function parseDay(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text ? undefined : ms;
}

/** The orders filter of a query string; each field that cannot be read is named in `problems`. */
export function parseOrdersQuery(query: Record<string, unknown>): ParsedFilter {
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
  const form: FilterForm = { status: text('status'), from: text('from'), to: text('to'), session: text('session'), q: text('q') };
  const problems: ParsedFilter['problems'] = [];
  const filter: OrderFilter = {};
  if (form.status === 'SUCCESS' || form.status === 'REVERSED') filter.status = form.status;
  else if (form.status !== '') problems.push({ field: 'status', label: 'Status', message: 'must be Paid, Reversed or All' });
  for (const [name, label] of [
    ['from', 'From'],
    ['to', 'To'],
  ] as const) {
    if (form[name] === '') continue;
    const day = parseDay(form[name]);
    if (day === undefined) problems.push({ field: name, label, message: 'must be a date written YYYY-MM-DD' });
    else if (name === 'from') filter.from = day;
    else filter.to = day + DAY_MS; // the whole day is included
  }
  if (filter.from !== undefined && filter.to !== undefined && filter.to <= filter.from)
    problems.push({ field: 'to', label: 'To', message: 'must be the same day as From or later' });
  if (form.session !== '') {
    if (/^[A-Za-z0-9_-]{1,64}$/.test(form.session)) filter.sessionId = form.session;
    else problems.push({ field: 'session', label: 'Session', message: 'must be a payment session id' });
  }
  if (form.q !== '') {
    if (form.q.length <= 200) filter.search = form.q;
    else problems.push({ field: 'q', label: 'Search', message: 'must be at most 200 characters' });
  }
  let after: OrdersCursor | undefined;
  const afterText = text('after');
  if (afterText !== '') {
    after = parseCursor(afterText);
    if (!after) problems.push({ field: 'after', label: 'Page', message: 'is not a page of this list; start again from the newest' });
  }
  return { filter, after, form, problems };
}

/** The filter's query string (without the page). */
function filterQuery(form: FilterForm): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) if (value !== '') params.set(name, value);
  return params.toString();
}

const shortHash = (hash: string) => (hash.length > 14 ? `${hash.slice(0, 8)}…${hash.slice(-4)}` : hash);

function orderRow(order: MerchantOrder, explorerTxUrl: string): Html {
  const receipt = `/checkout/v2/orders/receipt/${encodeURIComponent(order.publicOrderId)}`;
  return html`<tr>
<td data-label="Paid">${moment(order.settledAtMs)}</td>
<td data-label="Order"><a href="${receipt}"><code>${order.publicOrderId}</code></a>${order.orderId === null ? '' : html`<br><span class="note">Your id: ${order.orderId}</span>`}</td>
<td data-label="For">${order.concept ?? ''}</td>
<td data-label="Amount" class="nowrap">${order.amountText}<br><span class="note">${order.tokenAmount} ${order.token}</span></td>
<td data-label="Status">${paymentStatusTag(order.status)}${refundPart(order)}</td>
<td data-label="Session"><a href="${PATH}?session=${encodeURIComponent(order.paymentSessionId)}"><code>${order.paymentSessionId}</code></a></td>
<td data-label="Transaction" class="nowrap"><a href="${explorerUrl(explorerTxUrl, order.transactionHash)}" title="Transaction ${order.transactionHash} on the explorer"><code>${shortHash(order.transactionHash)}</code></a></td>
</tr>`;
}

function filterForm(form: FilterForm, invalid: Set<string>): Html {
  const field = (name: keyof FilterForm, label: string, type: string, hint: Html = html``) =>
    html`<p><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" type="${type}" value="${form[name]}"${invalid.has(name) ? html` aria-invalid="true"` : ''}${hint}></p>`;
  const option = (value: string, label: string) => html`<option value="${value}"${form.status === value ? html` selected` : ''}>${label}</option>`;
  return html`<form method="get" action="${PATH}" class="filters" role="search" aria-label="Filter orders">
<p><label for="f-status">Status</label><select id="f-status" name="status"${invalid.has('status') ? html` aria-invalid="true"` : ''}>${option('', 'All')}${option('SUCCESS', 'Paid')}${option('REVERSED', 'Reversed')}</select></p>
${field('from', 'From', 'date')}${field('to', 'To', 'date')}${field('session', 'Session', 'text', html` autocomplete="off"`)}${field('q', 'Order id or TX- id', 'search', html` autocomplete="off"`)}
<p class="actions"><button type="submit">Filter</button> <a href="${PATH}">Clear</a></p>
</form>`;
}

/** Orders narrowed to one order by its TX- id: its refund form below it (in test mode with the sandbox demo wallet, when it is the payout wallet). */
async function refundOf(
  context: AppContext,
  orders: MerchantOrder[],
  parsed: ParsedFilter,
  signedIn: DashboardUser,
  query: Record<string, unknown>,
): Promise<Html> {
  if (orders.length !== 1 || !/^tx-/i.test(parsed.filter.search ?? '')) return html``;
  const { mode } = signedIn.modes;
  const testWallet = mode === 'sandbox' ? ((await findMerchant(context.db, signedIn.user.merchantId))?.wallets.sandbox ?? null) : null;
  const sandboxKey = sandboxPayoutKeyFor(context.config.dataDir, mode, testWallet);
  return refundSection(orders[0]!, signedIn.csrfToken, query, walletRpcUrlOf(context.config, mode), sandboxKey);
}

async function ordersPage(
  context: AppContext,
  signedIn: DashboardUser,
  parsed: ParsedFilter,
  requestQuery: Record<string, unknown> = {},
): Promise<{ status: number; page: Html }> {
  const invalid = new Set(parsed.problems.map((p) => p.field));
  const problem = parsed.problems.length ? parsed.problems.map((p) => `${p.label} ${p.message}.`).join(' ') : undefined;
  const slice = problem
    ? { orders: [], next: undefined }
    : await searchOrders(context.db, signedIn.modes.mode, signedIn.user.merchantId, parsed.filter, { after: parsed.after, size: ORDERS_PAGE_SIZE });
  // The orders of one session come with its refused attempts.
  const attempts =
    problem || parsed.filter.sessionId === undefined
      ? undefined
      : await listRefusedAttempts(context.db, signedIn.modes.mode, signedIn.user.merchantId, parsed.filter.sessionId);
  const query = filterQuery(parsed.form);
  const filtered = query !== '';
  const list = slice.orders.length
    ? html`<table class="cards orders"><caption class="note">Newest first${parsed.after ? ', older page' : ''}</caption><thead><tr><th scope="col">Paid</th><th scope="col">Order</th><th scope="col">For</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Session</th><th scope="col">Transaction</th></tr></thead><tbody>
${joinHtml(
  slice.orders.map((order) => orderRow(order, explorerTxUrlOf(context.config, signedIn.modes.mode))),
  html`\n`,
)}
</tbody></table>`
    : html`<p>${problem ? 'Fix the filter to see orders.' : filtered || parsed.after ? 'No order matches this filter.' : 'No paid order yet. Orders appear here once a payment settles.'}</p>`;
  const pager = cursorPager({
    path: PATH,
    filter: parsed.form,
    paged: parsed.after !== undefined,
    next: slice.next && cursorText(slice.next),
    older: 'Older orders',
    label: 'Pages of orders',
  });
  const csv = problem
    ? ''
    : html`<p><a href="${PATH}.csv${query ? `?${query}` : ''}" download>Export ${filtered ? 'these orders' : 'all orders'} as CSV</a></p>`;
  return {
    status: problem ? 400 : 200,
    page: dashboardPage({
      signedIn,
      section: 'orders',
      ...(problem ? { problem } : {}),
      body: html`${filterForm(parsed.form, invalid)}${csv}${list}${pager}${await refundOf(context, slice.orders, parsed, signedIn, requestQuery)}${refusedAttemptsSection(attempts)}`,
    }),
  };
}

export const ORDERS_CSV_HEADER = [
  'paid_at',
  'public_order_id',
  'status',
  'order_id',
  'payment_session_id',
  'amount',
  'currency',
  'token_amount',
  'token',
  'network',
  'transaction_hash',
  'explorer_url',
  'receipt_url',
  'refunded_token_amount',
  'concept',
];

/** Every order of the filter as CSV lines, read a slice at a time. */
async function* csvLines(context: AppContext, mode: Mode, merchantId: string, filter: OrderFilter): AsyncGenerator<string> {
  yield toCsvLine(ORDERS_CSV_HEADER);
  const base = context.config.baseUrl.replace(/\/$/, '');
  let after: OrdersCursor | undefined;
  do {
    const slice = await searchOrders(context.db, mode, merchantId, filter, { size: CSV_SLICE, ...(after ? { after } : {}) });
    let chunk = '';
    for (const order of slice.orders)
      chunk += toCsvLine([
        order.paidAt,
        order.publicOrderId,
        order.status,
        order.orderId ?? '',
        order.paymentSessionId,
        String(order.amount),
        order.currency,
        order.tokenAmount,
        order.token,
        order.network,
        order.transactionHash,
        explorerUrl(explorerTxUrlOf(context.config, mode), order.transactionHash),
        `${base}/checkout/v2/orders/receipt/${order.publicOrderId}`,
        order.refundedTokenAmount,
        order.concept ?? '',
      ]);
    if (chunk) yield chunk;
    after = slice.next;
  } while (after);
}

/** Orders: the merchant's settled orders, filtered and paged, and their CSV export. */
export function registerOrders(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: PATH,
      permission: 'view',
      summary: 'The signed-in merchant’s orders, newest first, filtered (status, dates, session, order id or TX- id), paged by cursor',
      responses: { 400: FILTER_REFUSED },
    },
    async (signedIn, request, reply) => {
      const query = request.query as Record<string, unknown>;
      const { status, page } = await ordersPage(context, signedIn, parseOrdersQuery(query), query);
      return sendPage(reply, status, page);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: `${PATH}.csv`,
      permission: 'view',
      summary: 'The signed-in merchant’s orders of a filter (the page’s query string) as CSV, streamed',
      description: 'Cells that a spreadsheet would read as a formula (starting with = + - @, tab or carriage return) are prefixed with a quote.',
      responses: { 200: { description: 'text/csv' }, 400: FILTER_REFUSED },
    },
    async (signedIn, request, reply) => {
      const parsed = parseOrdersQuery(request.query as Record<string, unknown>);
      if (parsed.problems.length) {
        const { status, page } = await ordersPage(context, signedIn, parsed);
        return sendPage(reply, status, page);
      }
      const day = new Date(context.now()).toISOString().slice(0, 10);
      return reply
        .code(200)
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="orders-${day}.csv"`)
        .header('cache-control', 'no-store')
        .send(Readable.from(csvLines(context, signedIn.modes.mode, signedIn.user.merchantId, parsed.filter)));
    },
  );
}
