import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { formCsrfToken } from '../../accounts/web-session.ts';
import { invalidField, TillError } from '../../common/errors.ts';
import { explorerTxUrlOf } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import { ErrorResponse } from '../../http/errors.ts';
import { formFields, registerFormParser } from '../../http/forms.ts';
import { addRoute } from '../../http/routes.ts';
import { validate } from '../../http/validation.ts';
import { MAX_ADDRESS, mailAddressProblem } from '../../mail/address.ts';
import type { NoticeTopic, OutboxMail } from '../../mail/kinds.ts';
import { RECEIPT_ADDRESSES_PER_PAYMENT, requestReceipt } from '../../mail/notices.ts';
import { findMail, listMails } from '../../mail/outbox.ts';
import { unsubscribe } from '../../mail/preferences.ts';
import { RECEIPT_MAIL_JSON_PATH, RECEIPT_MAIL_PATH } from '../../mail/receipt-request.ts';
import { readUnsubscribe, UNSUBSCRIBE_PATH } from '../../mail/unsubscribe.ts';
import { addFormRoute, postedFromOurPages } from '../kit/forms.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { HTML_RESPONSE, page, sendPage } from '../kit/page.ts';
import { type MailRenderContext, renderMail } from './templates.ts';

const SANDBOX_TAG = 'Sandbox';
const MAIL_TAG = 'Mail';
/** The newest kept mails the sandbox's page shows. */
const SHOWN = 100;

/**
 * A mail's HTML part shown on its own: its inline styles, the merchant's logo from this origin,
 * nothing else; no script, no form, and sandboxed (a unique origin) so its links open elsewhere.
 */
const MAIL_HTML_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox allow-popups allow-popups-to-escape-sandbox";

const TOPIC_NAMES: Record<NoticeTopic, string> = {
  payments: 'payments received',
  refunds: 'refunds',
  attention: 'payments that need attention',
  webhooks: 'a webhook endpoint failing',
  summary: 'summaries',
};

const when = (at: number) => html`<time datetime="${new Date(at).toISOString()}">${new Date(at).toISOString().replace('T', ' ').slice(0, 19)} UTC</time>`;

const sandboxBanner = html`<p class="sandbox-banner" role="note"><strong>Sandbox:</strong> no SMTP server is set (TILL_SMTP_URL), so no mail leaves Till: each is kept here instead.</p>`;

function mailListPage(rows: { mail: OutboxMail; subject: string }[]): Html {
  const body = rows.length
    ? html`<table class="cards"><caption>The newest ${SHOWN} mails, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">To</th><th scope="col">Subject</th></tr></thead><tbody>${joinHtml(
        rows.map(
          ({ mail, subject }) =>
            html`<tr><td data-label="When">${when(mail.createdAt)}</td><td data-label="To">${mail.recipient}</td><td data-label="Subject"><a href="/sandbox/mail/${mail.id}">${subject}</a></td></tr>`,
        ),
      )}</tbody></table>`
    : html`<p>No mail yet. Pay a payment link, refund a payment or ask for a password reset, and its mail appears here.</p>`;
  return page(
    'Mail · Sandbox · Till',
    html`<main>${sandboxBanner}<h1>Sandbox mail</h1><p>Every mail Till would have sent: receipts to buyers, notices to merchants, password resets. Also listed by <code>till mail list</code>.</p>${body}</main>`,
  );
}

function mailPage(mail: OutboxMail, content: Awaited<ReturnType<typeof renderMail>>): Html {
  const headers = Object.entries(content.headers);
  return page(
    `${content.subject} · Sandbox mail · Till`,
    html`<main>${sandboxBanner}<p><a href="/sandbox/mail">All mail</a></p><h1>${content.subject}</h1>
<table><tbody><tr><th scope="row">To</th><td>${mail.recipient}</td></tr><tr><th scope="row">Kept</th><td>${when(mail.createdAt)}</td></tr>${joinHtml(
      headers.map(([name, value]) => html`<tr><th scope="row">${name}</th><td><code>${value}</code></td></tr>`),
    )}</tbody></table>
<p><a href="/sandbox/mail/${mail.id}/html">Open the HTML part</a></p>
<h2>Plain-text part</h2><pre class="mail-text">${content.text}</pre></main>`,
  );
}

function unsubscribePage(view: { topic: NoticeTopic; done: boolean; action: string }): Html {
  const name = TOPIC_NAMES[view.topic];
  return page(
    'Unsubscribe · Till',
    view.done
      ? html`<main><h1>Unsubscribed</h1><p>You no longer receive mails about ${name}. Turn them on again on the dashboard's Notifications page.</p></main>`
      : html`<main><h1>Unsubscribe</h1><p>Stop the mails about ${name}?</p><form method="post" action="${view.action}"><p><button type="submit">Unsubscribe</button></p></form></main>`,
  );
}

/** A public order id (TX- and 32 hex digits), or undefined. */
const orderOf = (value: unknown) => (typeof value === 'string' && /^TX-[0-9A-F]{32}$/.test(value) ? value : undefined);

const tooManyAddresses = `This receipt was already sent to ${RECEIPT_ADDRESSES_PER_PAYMENT} addresses, the most one payment takes.`;

type ReceiptRequest = { sent: string } | { problem: string } | 'not_found' | 'too_many';

/** A buyer's request to have a settled payment's receipt emailed: the address checked, then queued once (the form and the hosted page's script alike). */
async function requestReceiptMail(context: AppContext, order: string, given: string): Promise<ReceiptRequest> {
  const email = given.trim().slice(0, MAX_ADDRESS + 1);
  const problem = mailAddressProblem(email);
  if (problem) return { problem };
  const outcome = await requestReceipt(context.db, order, email, { now: context.now(), explorerTxUrl: (mode) => explorerTxUrlOf(context.config, mode) });
  return outcome === 'queued' ? { sent: email.toLowerCase() } : outcome;
}

const ReceiptMailBody = z.strictObject({
  order: z.string().meta({ description: 'The public order id of the settled payment (TX-…)' }),
  email: z.string().meta({ description: "The buyer's address" }),
});

function receiptRequestPage(view: { order: string; csrf: string; email?: string; problem?: string; sent?: string }): Html {
  if (view.sent)
    return page(
      'Receipt sent · Till',
      html`<main><h1>Your receipt is on its way</h1><p>It goes to <strong>${view.sent}</strong>, with a receipt of any refund of this payment.</p><p><a href="/checkout/v2/orders/receipt/${view.order}">View the receipt</a></p></main>`,
    );
  return page(
    'Email the receipt · Till',
    html`<main><h1>Email me the receipt</h1><p>Payment <code>${view.order}</code>. The address is used for this payment's receipt and its refunds only.</p>
${view.problem ? html`<p role="alert" class="problem">${view.problem}</p>` : ''}<form method="post" action="${RECEIPT_MAIL_PATH}"><input type="hidden" name="csrf" value="${view.csrf}"><input type="hidden" name="order" value="${view.order}">
<p><label for="email">Email</label><br><input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${view.email ?? ''}"${view.problem ? html` aria-invalid="true"` : ''}></p>
<p><button type="submit">Send the receipt</button></p></form><p><a href="/checkout/v2/orders/receipt/${view.order}">View the receipt</a></p></main>`,
  );
}

/** The sandbox's mail page (a deployment that serves test mode only, without SMTP), and the unsubscribe links of notices. */
export function registerMailPages(app: FastifyInstance, context: AppContext): void {
  const renderContext: MailRenderContext = { db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey };
  // Kept mails hold sign-in links and buyers' addresses: shown only where nothing is live.
  const shown = () => !context.config.modes.includes('live');
  const keptMail = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const mail = shown() ? await findMail(context.db, id) : undefined;
    return mail?.status === 'KEPT' ? mail : undefined;
  };
  const notFound = page('Not found · Till', html`<main><h1>No such mail</h1><p><a href="/sandbox/mail">All mail</a></p></main>`);

  addRoute(
    app,
    {
      method: 'GET',
      url: '/sandbox/mail',
      summary: "The sandbox's mail: every mail kept unsent (test mode only, no TILL_SMTP_URL)",
      tag: SANDBOX_TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (_request, reply) => {
      if (!shown()) return sendPage(reply, 404, notFound);
      const mails = await listMails(context.db, { status: 'KEPT', limit: SHOWN });
      const rows = await Promise.all(mails.map(async (mail) => ({ mail, subject: (await renderMail(renderContext, mail)).subject })));
      return sendPage(reply, 200, mailListPage(rows));
    },
  );
  addRoute(
    app,
    {
      method: 'GET',
      url: '/sandbox/mail/{id}',
      summary: 'One kept mail: its headers and plain-text part',
      tag: SANDBOX_TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const mail = await keptMail(request);
      if (!mail) return sendPage(reply, 404, notFound);
      return sendPage(reply, 200, mailPage(mail, await renderMail(renderContext, mail)));
    },
  );
  addRoute(
    app,
    {
      method: 'GET',
      url: '/sandbox/mail/{id}/html',
      summary: "One kept mail's HTML part, as a mail client shows it",
      tag: SANDBOX_TAG,
      security: 'none',
      responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    {},
    async (request, reply) => {
      const mail = await keptMail(request);
      if (!mail) return sendPage(reply, 404, notFound);
      const content = await renderMail(renderContext, mail);
      return reply
        .code(200)
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-security-policy', MAIL_HTML_CSP)
        .send(content.html);
    },
  );

  // The one-click unsubscribe of RFC 8058: a POST with `List-Unsubscribe=One-Click`, from a mail
  // client, with no cookie and no CSRF token; the link's HMAC is its authority.
  app.register(async (scope) => {
    registerFormParser(scope);
    const linkOf = (request: FastifyRequest) => readUnsubscribe(context.config.secretKey, request.query as Record<string, unknown>);
    const invalid = page(
      'Unsubscribe · Till',
      html`<main><h1>This unsubscribe link is not valid</h1><p>Copy the whole link from the mail, or change your notices on the dashboard's Notifications page.</p></main>`,
    );
    addRoute(
      scope,
      {
        method: 'GET',
        url: UNSUBSCRIBE_PATH,
        summary: "A notice's unsubscribe link: a page that asks to confirm",
        tag: MAIL_TAG,
        security: 'none',
        responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
      },
      {},
      async (request, reply) => {
        const link = linkOf(request);
        if (!link) return sendPage(reply, 404, invalid);
        return sendPage(reply, 200, unsubscribePage({ topic: link.topic, done: false, action: request.url }));
      },
    );
    addRoute(
      scope,
      {
        method: 'POST',
        url: UNSUBSCRIBE_PATH,
        summary: 'Unsubscribes from one notice (RFC 8058 one-click, or the confirm button)',
        description: 'The link names the user, the notice and an HMAC of both; a mail client posts `List-Unsubscribe=One-Click`.',
        tag: MAIL_TAG,
        security: 'none',
        responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
      },
      {},
      async (request, reply) => {
        const link = linkOf(request);
        if (!link) return sendPage(reply, 404, invalid);
        await unsubscribe(context.db, link.userId, link.topic, context.now());
        return sendPage(reply, 200, unsubscribePage({ topic: link.topic, done: true, action: request.url }));
      },
    );

    // The hosted page's "Email me the receipt", once paid: the public order id is the buyer's proof.
    const noOrder = page('Email the receipt · Till', html`<main><h1>No such payment</h1><p>A receipt can be emailed once the payment has settled.</p></main>`);
    addRoute(
      scope,
      {
        method: 'GET',
        url: RECEIPT_MAIL_PATH,
        summary: "The buyer's form to have a settled payment's receipt emailed (?order=TX-…)",
        tag: MAIL_TAG,
        security: 'none',
        responses: { 200: HTML_RESPONSE, 404: HTML_RESPONSE },
      },
      {},
      async (request, reply) => {
        const order = orderOf((request.query as Record<string, unknown>).order);
        return order ? sendPage(reply, 200, receiptRequestPage({ order, csrf: formCsrfToken(context, request, reply) })) : sendPage(reply, 404, noOrder);
      },
    );
    // A form of a page anyone may open: guarded as the sign-in form is, by a token tied to a cookie of
    // the browser that loaded the page, and by the browser's Origin and Sec-Fetch-Site.
    const refused = page(
      'Email the receipt · Till',
      html`<main><h1>Send the receipt from its own page</h1><p>This form is taken only from Till's pages: open the link again and send it from there.</p></main>`,
    );
    addFormRoute(
      scope,
      context,
      {
        method: 'POST',
        url: RECEIPT_MAIL_PATH,
        summary: "Emails a settled payment's receipt, and its refunds' receipts, to the buyer's address",
        description: `Form fields \`csrf\` (from the form's page), \`order\` (the public order id, TX-…) and \`email\`. At most ${RECEIPT_ADDRESSES_PER_PAYMENT} addresses per payment.`,
        tag: MAIL_TAG,
        security: 'none',
        responses: { 200: HTML_RESPONSE, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 404: HTML_RESPONSE, 429: HTML_RESPONSE },
      },
      { kind: 'signed-out', refuse: (_request, reply) => sendPage(reply, 403, refused) },
      async (request, reply) => {
        const fields = formFields(request);
        const order = orderOf(fields.order);
        if (!order) return sendPage(reply, 404, noOrder);
        const email = fields.email ?? '';
        const csrf = formCsrfToken(context, request, reply);
        const outcome = await requestReceiptMail(context, order, email);
        if (outcome === 'not_found') return sendPage(reply, 404, noOrder);
        if (outcome === 'too_many') return sendPage(reply, 429, receiptRequestPage({ order, csrf, email, problem: tooManyAddresses }));
        if ('problem' in outcome) return sendPage(reply, 400, receiptRequestPage({ order, csrf, email, problem: `The email ${outcome.problem}.` }));
        return sendPage(reply, 200, receiptRequestPage({ order, csrf, sent: outcome.sent }));
      },
    );
  });

  // The hosted page's own email field, sent by its script once the payment is made. JSON only (a
  // cross-site page cannot send it without a CORS preflight, which is never granted) and refused
  // unless the browser says it came from our pages.
  addRoute(
    app,
    {
      method: 'POST',
      url: RECEIPT_MAIL_JSON_PATH,
      summary: "Emails a settled payment's receipt, and its refunds' receipts, to the address the buyer typed on the hosted page",
      description: `Called by the hosted page's script (same origin only). Answers \`{ email }\`, the address the receipt goes to. At most ${RECEIPT_ADDRESSES_PER_PAYMENT} addresses per payment; an address given before is taken again and mailed once.`,
      tag: MAIL_TAG,
      security: 'none',
      body: ReceiptMailBody,
      responses: {
        200: { description: 'Queued: `{ email }`', schema: z.object({ email: z.string() }) },
        400: {
          description:
            '`email` is not an address, or the payment has had its most addresses (`field`: email); `order` is not an order id; or the request came from another site',
          schema: ErrorResponse,
        },
        404: { description: 'No settled payment has this order id', schema: ErrorResponse },
      },
    },
    {
      onRequest: async (request) => {
        if (!postedFromOurPages(context, request))
          throw new TillError('invalid_request', {
            problem: "This request is taken only from Till's own hosted page (its Origin or Sec-Fetch-Site names another site)",
          });
      },
    },
    async (request) => {
      const body = validate(ReceiptMailBody, request.body);
      const order = orderOf(body.order);
      if (!order) throw invalidField('order', 'is not a public order id (TX- and 32 hex digits)');
      const outcome = await requestReceiptMail(context, order, body.email);
      if (outcome === 'not_found') throw new TillError('not_found', { what: 'A settled payment with this order id' });
      if (outcome === 'too_many') throw invalidField('email', `is refused: ${tooManyAddresses.charAt(0).toLowerCase()}${tooManyAddresses.slice(1)}`);
      if ('problem' in outcome) throw invalidField('email', outcome.problem);
      return { email: outcome.sent };
    },
  );
}
