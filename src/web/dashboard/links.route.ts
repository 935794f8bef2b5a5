import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import { getAddress } from 'viem';
import { can } from '../../accounts/roles.ts';
import { invalidField, TillError } from '../../common/errors.ts';
import { modeLabel } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import type { OrderType } from '../../db/schema.ts';
import { formFields } from '../../http/forms.ts';
import { validate } from '../../http/validation.ts';
import { recordActivity, withActivity } from '../../merchants/events.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { formatMinor } from '../../money/decimal.ts';
import { currencyExponent, formatMoney } from '../../money/iso4217.ts';
import { formatUsdc } from '../../money/usdc.ts';
import { createPaymentSession } from '../../sessions/create-session.ts';
import { CreateSessionBody } from '../../sessions/schemas.ts';
import { archiveSession, findMerchantSession, isExpired, listMerchantSessions, type SessionRow, setSessionDiscoverable } from '../../sessions/sessions.ts';
import { updatePaymentSession } from '../../sessions/update-session.ts';
import { redirectUrlFor } from '../../sessions/views.ts';
import { listRefusedAttempts } from '../../x402/attempts.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml, trusted } from '../kit/html.ts';
import { HTML_RESPONSE, sendPage } from '../kit/page.ts';
import { paymentStatusTag } from '../kit/status.ts';
import { refusedAttemptsSection } from './attempts.ts';
import { type DashboardUser, dashboardPage, onlyFor } from './layout.ts';
import { copyField, csrfInput, dashboardScript, moment } from './page-parts.ts';
import { addDashboardRoute } from './page-route.ts';

const PATH = '/dashboard/links';
const PAGE_SIZE = 20;

const NOTICES: Record<string, string> = {
  created: 'Payment link created. Share its URL or QR code.',
  saved: 'Changes saved.',
  archived: 'Payment link archived: it can no longer be paid.',
};

/** The form's fields, named as in E1 so a refusal's field is the form's. */
const FIELDS = {
  orderType: 'Kind',
  amount: 'Amount',
  currency: 'Currency',
  concept: 'What is paid for',
  editable: 'The buyer chooses the amount',
  minAmount: 'Minimum amount',
  orderId: 'Order ID',
  successUrl: 'Success URL',
  cancelUrl: 'Cancel URL',
  failUrl: 'Fail URL',
  discoverable: 'Listed for agents',
} as const;
type FieldName = keyof typeof FIELDS;
type FormValues = Partial<Record<FieldName, string>>;

const TEXT_FIELDS = CreateSessionBody.pick({ orderId: true, concept: true, successUrl: true, cancelUrl: true, failUrl: true });

const optional = (value: string | undefined) => (value === undefined || value.trim() === '' ? null : value.trim());

/** The form as E1/E2 input: empty optional fields are null (cleared); the text fields checked as E1 checks them. */
function linkInput(values: FormValues) {
  const amount = optional(values.amount);
  if (amount === null) throw invalidField('amount', 'is required');
  const currency = optional(values.currency);
  if (currency === null) throw invalidField('currency', 'is required');
  const text = validate(TEXT_FIELDS, {
    orderId: optional(values.orderId),
    concept: optional(values.concept),
    successUrl: optional(values.successUrl),
    cancelUrl: optional(values.cancelUrl),
    failUrl: optional(values.failUrl),
  });
  return { amount, currency, editable: values.editable === 'on', minAmount: optional(values.minAmount), ...text };
}

function formValues(request: FastifyRequest): FormValues {
  const fields = formFields(request);
  const values: FormValues = {};
  for (const name of Object.keys(FIELDS) as FieldName[]) if (fields[name] !== undefined) values[name] = fields[name];
  return values;
}

function sessionValues(session: SessionRow): FormValues {
  const exponent = currencyExponent(session.currency) ?? 2;
  return {
    orderType: session.order_type,
    amount: formatMinor(session.amount_minor, exponent),
    currency: session.currency,
    concept: session.concept ?? '',
    ...(session.editable === 1 ? { editable: 'on' } : {}),
    minAmount: session.min_amount_minor === null ? '' : formatMinor(session.min_amount_minor, exponent),
    orderId: session.order_id ?? '',
    successUrl: session.success_url ?? '',
    cancelUrl: session.cancel_url ?? '',
    failUrl: session.fail_url ?? '',
    ...(session.discoverable === 1 ? { discoverable: 'on' } : {}),
  };
}

/** A refusal as the page says it: the field's label, then the service's message (which names the field too). */
function problemText(error: TillError): string {
  const field = error.field as FieldName | undefined;
  return field && field in FIELDS ? `${FIELDS[field]}: ${error.message}` : error.message;
}

function textInput(name: FieldName, values: FormValues, invalid: string | undefined, attributes: Html, hint?: string): Html {
  const hintHtml = hint ? html`<span class="note" id="${name}-hint">${hint}</span>` : '';
  const describedBy = hint ? html` aria-describedby="${name}-hint"` : '';
  return html`<p><label for="${name}">${FIELDS[name]}</label>${hintHtml}<input id="${name}" name="${name}" value="${values[name] ?? ''}" ${attributes}${describedBy}${invalid === name ? html` aria-invalid="true"` : ''}></p>`;
}

/** The optional fields folded under "Order ID and return URLs" (unfolded when one is filled in or refused). */
const MORE: FieldName[] = ['orderId', 'successUrl', 'cancelUrl', 'failUrl'];

/** The fields of a link, for creating one (with its kind) or editing one (E2's fields). */
function linkFields(values: FormValues, invalid: string | undefined, options: { create: boolean }): Html {
  const kind = values.orderType ?? 'STATIC';
  const kindInvalid = invalid === 'orderType' ? html` aria-invalid="true"` : '';
  const kindFieldset = options.create
    ? html`<fieldset><legend>${FIELDS.orderType}</legend>
<p class="choice"><input type="radio" id="orderType-static" name="orderType" value="STATIC"${kind === 'STATIC' ? html` checked` : ''}${kindInvalid}> <label for="orderType-static">Reusable link (STATIC): never expires, takes many payments</label></p>
<p class="choice"><input type="radio" id="orderType-transient" name="orderType" value="TRANSIENT"${kind === 'TRANSIENT' ? html` checked` : ''}${kindInvalid}> <label for="orderType-transient">One payment (TRANSIENT): paid once, expires</label></p></fieldset>`
    : '';
  return html`${kindFieldset}
${textInput('amount', values, invalid, html`inputmode="decimal" autocomplete="off" required`, 'The price; with a buyer-chosen amount, the amount suggested.')}
${textInput('currency', { currency: 'USD', ...values }, invalid, html`maxlength="3" autocomplete="off" required`, 'ISO 4217 code: USD, EUR, …')}
${textInput('concept', values, invalid, html`maxlength="500"`, 'Shown to the buyer.')}
<p class="choice"><input type="checkbox" id="editable" name="editable"${values.editable === 'on' ? html` checked` : ''}${invalid === 'editable' ? html` aria-invalid="true"` : ''}> <label for="editable">${FIELDS.editable}</label></p>
${textInput('minAmount', values, invalid, html`inputmode="decimal" autocomplete="off"`, 'Optional floor of a buyer-chosen amount.')}
<details${MORE.some((name) => name === invalid || (values[name] ?? '') !== '') ? html` open` : ''}><summary>Order ID and return URLs</summary>
${textInput('orderId', values, invalid, html`maxlength="255" autocomplete="off"`, 'Optional: your own unique reference.')}
${textInput('successUrl', values, invalid, html`type="url" inputmode="url"`, 'Optional: where the buyer goes once paid.')}
${textInput('cancelUrl', values, invalid, html`type="url" inputmode="url"`, 'Optional: where the buyer goes on cancel.')}
${textInput('failUrl', values, invalid, html`type="url" inputmode="url"`, 'Optional: where the buyer goes when the payment fails.')}</details>
<p class="choice"><input type="checkbox" id="discoverable" name="discoverable" aria-describedby="discoverable-hint"${values.discoverable === 'on' ? html` checked` : ''}> <label for="discoverable">${FIELDS.discoverable}</label></p>
<p class="note" id="discoverable-hint">Agents can find it: its name, price and URL are listed at <code>/.well-known/x402</code> and its x402 challenges describe how to pay it. Off unless you tick it.</p>`;
}

/** A session's state as the dashboard names it: Archived, Paid, Expired or Open. */
export function statusText(session: SessionRow, now: number): string {
  if (session.archived_at !== null) return 'Archived';
  if (session.status === 'SUCCESS') return 'Paid';
  return isExpired(session, now) ? 'Expired' : 'Open';
}

async function listBody(
  context: AppContext,
  signedIn: DashboardUser,
  view: { page: number; archived: boolean; values: FormValues; invalid?: string },
): Promise<Html> {
  const merchantId = signedIn.user.merchantId;
  const [{ sessions, hasMore, page }, merchant] = await Promise.all([
    listMerchantSessions(context.db, signedIn.modes.mode, merchantId, { page: view.page, size: PAGE_SIZE, archived: view.archived }),
    findMerchant(context.db, merchantId),
  ]);
  const now = context.now();
  const rows = joinHtml(
    sessions.map(
      (
        session,
      ) => html`<tr><td data-label="Link"><a href="${PATH}/${encodeURIComponent(session.id)}">${session.concept ?? session.order_id ?? session.id}</a></td>
<td data-label="Amount">${formatMoney(session.amount_minor, session.currency)}${session.editable === 1 ? html` <span class="tag">buyer chooses</span>` : ''}</td>
<td data-label="Kind">${session.order_type}</td><td data-label="Status">${statusText(session, now)}</td><td data-label="Created">${moment(session.created_at)}</td></tr>`,
    ),
    html`\n`,
  );
  const query = (p: number) => `${PATH}?${view.archived ? 'archived=1&' : ''}page=${p}`;
  const pages = [
    page > 1 ? html`<a href="${query(page - 1)}">Newer</a>` : undefined,
    hasMore ? html`<a href="${query(page + 1)}">Older</a>` : undefined,
  ].filter((link) => link !== undefined);
  const table = sessions.length
    ? html`<table class="cards"><thead><tr><th scope="col">Link</th><th scope="col">Amount</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p>${view.archived ? 'No archived link.' : 'No payment link yet.'}</p>`;
  return html`${merchant?.wallets[signedIn.modes.mode] ? '' : html`<p class="problem">No ${modeLabel(signedIn.modes.mode)} payout wallet is set: links cannot be paid until it is (Settings).</p>`}
<section aria-labelledby="new-link-heading"><h2 id="new-link-heading">New payment link</h2>
${onlyFor(
  signedIn,
  'links',
  html`<form method="post" action="${PATH}" class="link-form">${csrfInput(signedIn.csrfToken)}
${linkFields(view.values, view.invalid, { create: true })}
<p><button type="submit">Create the link</button></p></form>`,
)}</section>
<section aria-labelledby="links-heading"><h2 id="links-heading">${view.archived ? 'Archived links' : 'Your links'}</h2>
<p class="note">Newest first. ${view.archived ? html`<a href="${PATH}">Show active links</a>` : html`<a href="${PATH}?archived=1">Show archived links</a>`}</p>
${table}${pages.length ? html`<nav aria-label="Pages of links"><p>${joinHtml(pages, html` · `)}</p></nav>` : ''}</section>`;
}

async function qrCode(url: string): Promise<Html> {
  const svg = await QRCode.toString(url, { type: 'svg', margin: 1, errorCorrectionLevel: 'M', color: { dark: '#000000', light: '#ffffff' } });
  // trusted: an SVG of paths only, drawn by the qrcode library from the link's URL (no text of it is in the markup).
  return trusted(svg.replace('<svg ', '<svg role="img" aria-labelledby="qr-caption" focusable="false" '));
}

function changeable(session: SessionRow, now: number): boolean {
  if (session.archived_at !== null) return false;
  return session.order_type === 'STATIC' || (session.status === 'OPEN' && !isExpired(session, now));
}

async function detailBody(context: AppContext, signedIn: DashboardUser, session: SessionRow, view: { values?: FormValues; invalid?: string }): Promise<Html> {
  const now = context.now();
  const url = redirectUrlFor(context.config.baseUrl, session.id);
  const payments = await context.db
    .selectFrom('payments')
    .selectAll()
    .where('session_id', '=', session.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(100)
    .execute();
  const paymentRows = joinHtml(
    payments.map(
      (
        p,
      ) => html`<tr><td data-label="Order">${p.public_order_id ? html`<a href="/checkout/v2/orders/receipt/${encodeURIComponent(p.public_order_id)}"><code>${p.public_order_id}</code></a>` : '—'}</td>
<td data-label="Status">${paymentStatusTag(p.status)}</td><td data-label="Amount">${formatMoney(p.amount_minor, p.currency)} <span class="note">(${formatUsdc(p.value)} USDC)</span></td>
<td data-label="Payer"><code>${getAddress(p.payer)}</code></td><td data-label="When">${moment(p.settled_at ?? p.created_at)}</td></tr>`,
    ),
    html`\n`,
  );
  const attempts = await listRefusedAttempts(context.db, signedIn.modes.mode, session.merchant_id, session.id);
  const paymentsTable = payments.length
    ? html`<table class="cards"><thead><tr><th scope="col">Order</th><th scope="col">Status</th><th scope="col">Amount</th><th scope="col">Payer</th><th scope="col">When</th></tr></thead><tbody>${paymentRows}</tbody></table>`
    : html`<p>No payment yet.</p>`;
  const csrf = csrfInput(signedIn.csrfToken);
  const edit = !can(signedIn.user.role, 'links')
    ? onlyFor(signedIn, 'links', html``)
    : changeable(session, now)
      ? html`<form method="post" action="${PATH}/${encodeURIComponent(session.id)}" class="link-form">${csrf}
${linkFields(view.values ?? sessionValues(session), view.invalid, { create: false })}
<p><button type="submit">Save changes</button></p></form>`
      : html`<p>This link can no longer change: it is paid, expired or archived.</p>`;
  const archive =
    session.archived_at === null && can(signedIn.user.role, 'links')
      ? html`<section aria-labelledby="archive-heading"><h2 id="archive-heading">Archive</h2><p>An archived link is hidden from your list and can no longer be paid. Payments already made stay.</p>
<form method="post" action="${PATH}/${encodeURIComponent(session.id)}/archive">${csrf}<button type="submit" class="danger">Archive this link</button></form></section>`
      : session.archived_at === null
        ? html``
        : html`<p>Archived ${moment(session.archived_at)}.</p>`;
  return html`<p><a href="${PATH}">← All payment links</a></p>
<dl class="facts"><div><dt>Status</dt><dd>${statusText(session, now)}</dd></div><div><dt>Kind</dt><dd>${session.order_type}</dd></div>
<div><dt>Amount</dt><dd>${formatMoney(session.amount_minor, session.currency)}${session.editable === 1 ? ' (the buyer chooses)' : ''}</dd></div>
<div><dt>Listed for agents</dt><dd>${session.discoverable === 1 ? 'Yes, at /.well-known/x402' : 'No'}</dd></div>
<div><dt>Created</dt><dd>${moment(session.created_at)}</dd></div>${session.expires_at === null ? '' : html`<div><dt>Expires</dt><dd>${moment(session.expires_at)}</dd></div>`}</dl>
<section aria-labelledby="share-heading"><h2 id="share-heading">Share</h2>
${copyField('link-url', 'Link URL', url)}
<p><a href="${url}">Open the payment page</a></p>
<figure class="qr">${await qrCode(url)}<figcaption id="qr-caption">QR code of the link’s URL</figcaption></figure></section>
<section aria-labelledby="payments-heading"><h2 id="payments-heading">Payments</h2>${paymentsTable}</section>
${refusedAttemptsSection(attempts)}
<section aria-labelledby="edit-heading"><h2 id="edit-heading">Edit</h2>${edit}</section>
${archive}${dashboardScript()}`;
}

type PageView = { notice?: string | undefined; problem?: string | undefined };

function sendLinksPage(
  _context: AppContext,
  reply: FastifyReply,
  signedIn: DashboardUser,
  status: number,
  heading: string | undefined,
  view: PageView,
  body: Html,
) {
  return sendPage(
    reply,
    status,
    dashboardPage({
      signedIn,
      section: 'links',
      ...(heading ? { heading } : {}),
      ...(view.notice ? { notice: view.notice } : {}),
      ...(view.problem ? { problem: view.problem } : {}),
      body,
    }),
  );
}

const notFound = (context: AppContext, reply: FastifyReply, signedIn: DashboardUser) =>
  sendLinksPage(
    context,
    reply,
    signedIn,
    404,
    'No such payment link',
    {},
    html`<p>It does not exist, or it is not one of yours.</p><p><a href="${PATH}">All payment links</a></p>`,
  );

const noticeOf = (request: FastifyRequest) => {
  const done = (request.query as { done?: unknown }).done;
  return typeof done === 'string' ? NOTICES[done] : undefined;
};

const heading = (session: SessionRow) => session.concept ?? 'Payment link';

/** Payment links: create (STATIC or TRANSIENT), list, copy the URL, QR code, edit (E2's fields), payments, archive. */
export function registerLinks(app: FastifyInstance, context: AppContext): void {
  const route = (doc: Parameters<typeof addDashboardRoute>[2], handler: Parameters<typeof addDashboardRoute>[3]) =>
    addDashboardRoute(app, context, doc, handler);

  route(
    { method: 'GET', url: PATH, permission: 'view', summary: "The signed-in merchant's payment links, newest first, and the form of a new one" },
    async (signedIn, request, reply) => {
      const query = request.query as { page?: unknown; archived?: unknown };
      const page = typeof query.page === 'string' && /^\d{1,6}$/.test(query.page) ? Number(query.page) : 1;
      const body = await listBody(context, signedIn, { page, archived: query.archived === '1', values: {} });
      return sendLinksPage(context, reply, signedIn, 200, undefined, { notice: noticeOf(request) }, body);
    },
  );

  route(
    { method: 'POST', url: PATH, permission: 'links', summary: 'Creates a payment link (a payment session, as E1)', responses: { 400: HTML_RESPONSE } },
    async (signedIn, request, reply) => {
      const values = formValues(request);
      try {
        const orderType = values.orderType ?? 'STATIC';
        if (orderType !== 'STATIC' && orderType !== 'TRANSIENT') throw invalidField('orderType', 'must be STATIC or TRANSIENT');
        const input = linkInput(values);
        const created = await createPaymentSession(
          context,
          signedIn.user.merchantId,
          { ...input, orderType: orderType as OrderType },
          {
            createdVia: 'dashboard',
            mode: signedIn.modes.mode,
            alsoInTransaction: (trx) =>
              recordActivity(
                trx,
                signedIn.user.merchantId,
                actorOf(signedIn.user, request),
                {
                  type: 'link_created',
                  mode: signedIn.modes.mode,
                  detail: { amount: `${input.amount ?? ''} ${input.currency ?? ''}`.trim(), concept: input.concept ?? null },
                },
                context.now(),
              ),
          },
        );
        if (values.discoverable === 'on')
          await setSessionDiscoverable(context.db, signedIn.modes.mode, signedIn.user.merchantId, created.sessionId, true, context.now());
        return reply.redirect(`${PATH}/${encodeURIComponent(created.sessionId)}?done=created`, 303);
      } catch (error) {
        if (!(error instanceof TillError)) throw error;
        const body = await listBody(context, signedIn, { page: 1, archived: false, values, ...(error.field ? { invalid: error.field } : {}) });
        return sendLinksPage(context, reply, signedIn, error.status, undefined, { problem: problemText(error) }, body);
      }
    },
  );

  route(
    {
      method: 'GET',
      url: `${PATH}/{sessionId}`,
      permission: 'view',
      summary: 'One payment link: its URL, QR code, payments and edit form',
      responses: { 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { sessionId } = request.params as { sessionId: string };
      const session = await findMerchantSession(context.db, signedIn.modes.mode, signedIn.user.merchantId, sessionId);
      if (!session) return notFound(context, reply, signedIn);
      return sendLinksPage(context, reply, signedIn, 200, heading(session), { notice: noticeOf(request) }, await detailBody(context, signedIn, session, {}));
    },
  );

  route(
    {
      method: 'POST',
      url: `${PATH}/{sessionId}`,
      permission: 'links',
      summary: 'Changes a payment link (E2’s fields); nothing is saved when a field is refused',
      responses: { 400: HTML_RESPONSE, 404: HTML_RESPONSE, 409: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { sessionId } = request.params as { sessionId: string };
      const merchantId = signedIn.user.merchantId;
      const session = await findMerchantSession(context.db, signedIn.modes.mode, merchantId, sessionId);
      if (!session) return notFound(context, reply, signedIn);
      const values = formValues(request);
      try {
        const merchant = await findMerchant(context.db, merchantId);
        await updatePaymentSession(
          context,
          merchantId,
          { sessionId, ...linkInput(values) },
          {
            walletConfigured: merchant?.wallets[signedIn.modes.mode] != null,
            mode: signedIn.modes.mode,
            alsoInTransaction: (trx) =>
              recordActivity(
                trx,
                merchantId,
                actorOf(signedIn.user, request),
                { type: 'link_changed', mode: signedIn.modes.mode, detail: { link: sessionId } },
                context.now(),
              ),
          },
        );
        await setSessionDiscoverable(context.db, signedIn.modes.mode, merchantId, sessionId, values.discoverable === 'on', context.now());
        return reply.redirect(`${PATH}/${encodeURIComponent(sessionId)}?done=saved`, 303);
      } catch (error) {
        if (!(error instanceof TillError)) throw error;
        const current = (await findMerchantSession(context.db, signedIn.modes.mode, merchantId, sessionId)) ?? session;
        const body = await detailBody(context, signedIn, current, { values, ...(error.field ? { invalid: error.field } : {}) });
        return sendLinksPage(context, reply, signedIn, error.status, heading(current), { problem: problemText(error) }, body);
      }
    },
  );

  route(
    {
      method: 'POST',
      url: `${PATH}/{sessionId}/archive`,
      permission: 'links',
      summary: 'Archives a payment link: hidden from the list, no longer payable',
      responses: { 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { sessionId } = request.params as { sessionId: string };
      const archived = await withActivity(
        context.db,
        signedIn.user.merchantId,
        actorOf(signedIn.user, request),
        (trx) => archiveSession(trx, signedIn.modes.mode, signedIn.user.merchantId, sessionId, context.now()),
        (yes) => (yes ? { type: 'link_archived', mode: signedIn.modes.mode, detail: { link: sessionId } } : undefined),
        context.now(),
      );
      if (!archived) return notFound(context, reply, signedIn);
      return reply.redirect(`${PATH}?done=archived`, 303);
    },
  );
}
