import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { can } from '../../accounts/roles.ts';
import { TillError } from '../../common/errors.ts';
import type { Mode } from '../../common/modes.ts';
import { refusalOf } from '../../common/ssrf.ts';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { formFields, formValues } from '../../http/forms.ts';
import { findPreferences, savePreferences } from '../../mail/preferences.ts';
import { withActivity } from '../../merchants/events.ts';
import { formatMoney } from '../../money/iso4217.ts';
import { listSessionsCreatedVia, parseSessionsCursor, type SessionsCursor, sessionsCursorText } from '../../sessions/sessions.ts';
import { webhookTargetAllowance } from '../../webhooks/deliver.ts';
import { type DeliveryView, listDeliveries, redeliverEvent, sendTestEvent } from '../../webhooks/deliveries.ts';
import {
  checkOverlapHours,
  DEFAULT_OVERLAP_HOURS,
  getWebhook,
  MAX_OVERLAP_HOURS,
  setWebhook,
  type WebhookEndpoint,
  WebhookSettingsError,
} from '../../webhooks/endpoints.ts';
import { DEFAULT_EVENTS, EVENT_TYPES } from '../../webhooks/event-types.ts';
import { limitTestEvents } from '../../webhooks/test-event-limit.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { HTML_RESPONSE, sendPage } from '../kit/page.ts';
import { passwordRefusal } from '../kit/reauth.ts';
import { type DashboardUser, dashboardPage, onlyFor } from './layout.ts';
import { statusText } from './links.route.ts';
import { noticeSection, readNoticeForm, undeliveredSection } from './mail-notices.ts';
import { addDashboardRoute } from './page-route.ts';
import { csrfInput, cursorPager, moment } from './views.ts';

const PATH = '/dashboard/notifications';
const DELIVERIES_SHOWN = 25;
const EXCERPT_CHARS = 200;
const API_ORDERS_PAGE_SIZE = 25;

/** What one rendering of the page adds to the stored state: a notice, a refusal, the form as sent, the secrets when revealed. */
type PageState = {
  notice?: string;
  problem?: string;
  invalid?: 'url' | 'events' | 'password' | 'overlap';
  form?: { url: string; events: string[] };
  revealed?: { webhookKey: string; signingSecret: string };
  /** The page of the API orders list: after this session (`?after=`), the newest otherwise. */
  apiAfter?: SessionsCursor;
  /** The email notices' field refused. */
  noticeInvalid?: 'notices' | 'summary';
};

const NOTICES: Record<string, string> = {
  sent: 'Test event queued: it appears in the delivery log below once sent.',
  redelivered: 'Event queued again: the new delivery appears in the log below.',
  mail: 'Email notices saved.',
};

function endpointSection(signedIn: DashboardUser, endpoint: WebhookEndpoint | undefined, state: PageState, csrf: string): Html {
  const url = state.form?.url ?? endpoint?.url ?? '';
  const events = new Set(state.form?.events ?? endpoint?.events ?? DEFAULT_EVENTS);
  const aria = (field: PageState['invalid']) => (state.invalid === field ? html` aria-invalid="true"` : '');
  const boxes = EVENT_TYPES.map(
    (type) =>
      html`<li><input type="checkbox" id="ev-${type}" name="events" value="${type}"${events.has(type) ? html` checked` : ''}${aria('events')}> <label for="ev-${type}"><code>${type}</code></label></li>`,
  );
  const status = endpoint
    ? endpoint.disabledAt === null
      ? html`<p>Deliveries: <strong>on</strong>.</p>`
      : html`<p class="problem">Deliveries are <strong>off</strong> since ${moment(endpoint.disabledAt)}: ${endpoint.disabledReason ?? ''}. Saving the URL turns them on again.</p>`
    : html`<p>No webhook URL yet: Till tells your server about payments by posting events to it.</p>`;
  // A role that sees no form still reads where events go.
  const readOnly =
    endpoint && !can(signedIn.user.role, 'webhooks')
      ? html`<p>URL: <code>${endpoint.url}</code><br>Events: ${joinHtml(
          endpoint.events.map((type) => html`<code>${type}</code>`),
          html`, `,
        )}</p>`
      : '';
  return html`<h2 id="endpoint">Webhook endpoint</h2>${status}${readOnly}
${onlyFor(
  signedIn,
  'webhooks',
  html`<form method="post" action="${PATH}/endpoint">${csrfInput(csrf)}
<p><label for="wh-url">URL</label><input id="wh-url" name="url" type="url" inputmode="url" autocomplete="off" required value="${url}"${aria('url')}></p>
<fieldset><legend>Events</legend><ul class="scopes checks">${boxes}</ul></fieldset>
<p><button type="submit">Save</button></p></form>`,
)}`;
}

function secretsSection(endpoint: WebhookEndpoint | undefined, state: PageState, csrf: string): Html {
  if (!endpoint) return html``;
  const shown = state.revealed
    ? html`<dl class="secrets"><dt>Webhook key (<code>X-Webhook-Api-Key</code>)</dt><dd><code>${state.revealed.webhookKey}</code></dd>
<dt>Signing secret</dt><dd><code>${state.revealed.signingSecret}</code></dd></dl>`
    : html`<p>Your server checks each delivery with the webhook key and the signing secret. They are shown after you enter your password.</p>`;
  return html`<h2 id="secrets">Key and signing secret</h2>${shown}
<form method="post" action="${PATH}/reveal">${csrfInput(csrf)}
<p><label for="wh-password">Your password</label><input id="wh-password" name="password" type="password" autocomplete="current-password" required${state.invalid === 'password' ? html` aria-invalid="true"` : ''}></p>
<p><label for="wh-overlap">Old secret signs too for (hours)</label><input id="wh-overlap" name="overlap" type="number" inputmode="numeric" min="0" max="${MAX_OVERLAP_HOURS}" step="1" value="${DEFAULT_OVERLAP_HOURS}" class="short" aria-describedby="wh-overlap-hint"${state.invalid === 'overlap' ? html` aria-invalid="true"` : ''}></p>
<p class="note" id="wh-overlap-hint">Rotating makes a new key and signing secret at once; deliveries carry the new key and a signature with each secret (<code>webhook-signature</code> lists both) for the hours chosen here (0 to ${MAX_OVERLAP_HOURS}), so your receiver keeps verifying while you switch it to the new secret.</p>
${endpoint.previousSecretUntil ? html`<p>The previous signing secret signs deliveries too until ${moment(endpoint.previousSecretUntil)}.</p>` : ''}
<p class="actions"><button type="submit" class="secondary">Reveal</button> <button type="submit" class="danger" formaction="${PATH}/rotate">Rotate key and secret</button></p></form>`;
}

/** A delivery of the log; its Redeliver button only for a role that may change webhooks. */
function deliveryItem(delivery: DeliveryView, csrf: string | undefined): Html {
  const attempts = delivery.attempts.length
    ? html`<ol class="attempts">${delivery.attempts.map(
        (a) =>
          html`<li>${moment(Date.parse(a.at))} · ${a.statusCode === null ? html`<strong>no answer</strong>${a.error ? `: ${a.error}` : ''}` : html`HTTP <strong>${a.statusCode}</strong>`} · ${a.latencyMs} ms${
            a.response ? html`<br><code class="excerpt">${a.response.slice(0, EXCERPT_CHARS)}</code>` : ''
          }</li>`,
      )}</ol>`
    : html`<p class="note">Not attempted yet.</p>`;
  const status = { PENDING: 'Pending', SUCCEEDED: 'Delivered', FAILED: 'Failed' }[delivery.status];
  return html`<li class="delivery"><p><code>${delivery.event}</code> <span class="tag${delivery.status === 'SUCCEEDED' ? ' tag-granted' : delivery.status === 'FAILED' ? ' tag-opt-in' : ''}">${status}</span><br>
<span class="note">Event <code>${delivery.eventId}</code>, ${moment(Date.parse(delivery.createdAt))}${delivery.nextAttemptAt ? html`, next attempt ${moment(Date.parse(delivery.nextAttemptAt))}` : ''}</span></p>
${attempts}
${
  csrf === undefined
    ? ''
    : html`<form method="post" action="${PATH}/events/${encodeURIComponent(delivery.eventId)}/redeliver">${csrfInput(csrf)}<button type="submit" class="secondary" aria-label="Redeliver event ${delivery.eventId}">Redeliver</button></form>`
}</li>`;
}

/** Every order (payment session) the merchant created through the payment API (E1), newest first, paged by cursor. */
async function apiOrdersSection(context: AppContext, mode: Mode, merchantId: string, after: SessionsCursor | undefined): Promise<Html> {
  const slice = await listSessionsCreatedVia(context.db, mode, merchantId, 'api', { after, size: API_ORDERS_PAGE_SIZE });
  const now = context.now();
  const rows = joinHtml(
    slice.sessions.map(
      (session) => html`<tr><td data-label="Created">${moment(Number(session.created_at))}</td>
<td data-label="Session"><code>${session.id}</code></td>
<td data-label="Order id">${session.order_id === null ? html`<span class="note">none</span>` : html`<code>${session.order_id}</code>`}</td>
<td data-label="Amount">${formatMoney(session.amount_minor, session.currency)}</td>
<td data-label="Status">${statusText(session, now)}</td>
<td data-label="Payment link"><a href="/dashboard/links/${encodeURIComponent(session.id)}" aria-label="Open the payment link of ${session.id}">Open</a></td></tr>`,
    ),
    html`\n`,
  );
  const list = slice.sessions.length
    ? html`<table class="cards api-orders"><caption class="note">Newest first${after ? ', older page' : ''}</caption><thead><tr><th scope="col">Created</th><th scope="col">Session</th><th scope="col">Order id</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Payment link</th></tr></thead><tbody>
${rows}</tbody></table>`
    : html`<p>${after ? 'No older order.' : html`No order received through the API yet: sessions your server creates with <code>POST /api/checkout/v2/payment_session</code> appear here.`}</p>`;
  const pager = cursorPager({
    path: PATH,
    filter: {},
    paged: after !== undefined,
    next: slice.next && sessionsCursorText(slice.next),
    older: 'Older API orders',
    label: 'Pages of API orders',
    fragment: 'api-orders',
  });
  return html`<h2 id="api-orders">Orders received through the API</h2>
<p class="note">The payment sessions your server created with the payment API, with their status; payment links made here or by a coding agent are not listed.</p>
${list}${pager}`;
}

async function renderPage(context: AppContext, signedIn: DashboardUser, state: PageState): Promise<Html> {
  const merchantId = signedIn.user.merchantId;
  const endpoint = await getWebhook(context.db, context.config.secretKey, merchantId, signedIn.modes.mode, context.now());
  const deliveries = await listDeliveries(context.db, signedIn.modes.mode, { merchantId, limit: DELIVERIES_SHOWN });
  const csrf = signedIn.csrfToken;
  // The webhook forms only for a role that may change webhooks (the routes refuse the others anyway).
  const mayChange = can(signedIn.user.role, 'webhooks');
  const log = html`<h2 id="deliveries">Delivery log</h2>
${endpoint && mayChange ? html`<form method="post" action="${PATH}/test">${csrfInput(csrf)}<button type="submit" class="secondary">Send a test event</button></form>` : ''}
${
  deliveries.length
    ? html`<ul class="deliveries">${joinHtml(
        deliveries.map((d) => deliveryItem(d, mayChange ? csrf : undefined)),
        html`\n`,
      )}</ul><p class="note">The ${DELIVERIES_SHOWN} latest deliveries.</p>`
    : html`<p>No delivery yet.</p>`
}`;
  return dashboardPage({
    signedIn,
    section: 'notifications',
    ...(state.notice ? { notice: state.notice } : {}),
    ...(state.problem ? { problem: state.problem } : {}),
    body: html`${endpointSection(signedIn, endpoint, state, csrf)}\n${mayChange ? secretsSection(endpoint, state, csrf) : ''}\n${await apiOrdersSection(context, signedIn.modes.mode, merchantId, state.apiAfter)}\n${log}
${noticeSection(`${PATH}/mail`, signedIn.user.email, await findPreferences(context.db, signedIn.user.id), csrf, state.noticeInvalid)}
${await undeliveredSection(context, signedIn.modes.mode, merchantId)}`,
  });
}

async function answerPage(context: AppContext, reply: FastifyReply, signedIn: DashboardUser, status: number, state: PageState) {
  return sendPage(reply, status, await renderPage(context, signedIn, state));
}

/** Notifications: the webhook URL and events, the key and signing secret, a test event, the delivery log with redelivery; the user's email notices and the mails not delivered. */
export function registerNotifications(app: FastifyInstance, context: AppContext): void {
  const post = (
    url: string,
    summary: string,
    responses: Record<number, { description: string }>,
    handler: (signedIn: DashboardUser, fields: Record<string, string>, reply: FastifyReply, request: FastifyRequest) => Promise<unknown>,
  ) =>
    addDashboardRoute(
      app,
      context,
      // A user's own notice choices are their account's; everything else here is the merchant's webhooks.
      { method: 'POST', url, summary, responses: { 403: HTML_RESPONSE, ...responses }, permission: url === `${PATH}/mail` ? 'account' : 'webhooks' },
      (signedIn, request, reply) => handler(signedIn, formFields(request), reply, request),
    );

  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: PATH,
      permission: 'view',
      summary:
        'The signed-in merchant’s webhook endpoint, its key and secret (on request), the orders received through the API (paged), the delivery log with each attempt, the signed-in user’s email notices, and the mails that did not go',
      responses: { 400: { description: 'The API orders page (`after`) cannot be read' } },
    },
    async (signedIn, request, reply) => {
      const query = request.query as Record<string, unknown>;
      const done = Object.keys(NOTICES).find((key) => query[key] === '1');
      const apiAfter = typeof query.after === 'string' ? parseSessionsCursor(query.after) : undefined;
      if (typeof query.after === 'string' && !apiAfter)
        return answerPage(context, reply, signedIn, 400, { problem: 'Page: that is not a page of the API orders list; start again from the newest.' });
      return answerPage(context, reply, signedIn, 200, { ...(done ? { notice: NOTICES[done]! } : {}), ...(apiAfter ? { apiAfter } : {}) });
    },
  );

  post(
    `${PATH}/endpoint`,
    'Sets the webhook URL and events (form post); a URL the outbound guard refuses is saved with a warning that deliveries to it will not be sent',
    { 200: HTML_RESPONSE, 400: { description: 'URL or events refused: the page names the field; nothing is saved' } },
    async (signedIn, fields, reply, request) => {
      const url = (fields.url ?? '').trim();
      const events = formValues(request, 'events');
      const form = { url, events };
      if (url === '') return answerPage(context, reply, signedIn, 400, { form, invalid: 'url', problem: 'URL: enter the address of your webhook receiver.' });
      try {
        await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => setWebhook(trx, context.config.secretKey, signedIn.user.merchantId, { url, events }, signedIn.modes.mode, context.now()),
          () => ({ type: 'webhook_changed', mode: signedIn.modes.mode, detail: { url, events: events.join(' ') } }),
          context.now(),
        );
      } catch (error) {
        if (!(error instanceof WebhookSettingsError)) throw error;
        const field = error.field === 'events' ? 'events' : 'url';
        return answerPage(context, reply, signedIn, 400, {
          form,
          invalid: field,
          problem: `${field === 'url' ? 'URL' : 'Events'}: ${error.message}. Nothing was saved.`,
        });
      }
      const refusal = await refusalOf(url, webhookTargetAllowance(context.config.webhooks));
      return answerPage(context, reply, signedIn, 200, {
        notice: 'Webhook settings saved.',
        ...(refusal ? { invalid: 'url', problem: `Deliveries to this URL will not be sent: ${refusal}.` } : {}),
      });
    },
  );

  const withPassword = async (
    signedIn: DashboardUser,
    fields: Record<string, string>,
    reply: FastifyReply,
    request: FastifyRequest,
    type: 'webhook_secret_revealed' | 'webhook_secret_rotated',
    then: (endpoint: WebhookEndpoint, trx: Db) => Promise<PageState>,
  ) => {
    const endpoint = await getWebhook(context.db, context.config.secretKey, signedIn.user.merchantId, signedIn.modes.mode, context.now());
    if (!endpoint) return answerPage(context, reply, signedIn, 409, { problem: 'No webhook URL is set yet: save one first.' });
    // The password re-check is throttled as the sign-in's (per user): a stolen session cannot guess here.
    const wrong = await passwordRefusal(context, signedIn, fields.password);
    if (wrong)
      return answerPage(context, reply, signedIn, 400, {
        invalid: 'password',
        problem: `Password: ${wrong === 'is not right' ? 'that is not your password' : `your password ${wrong}`}. Nothing was shown or changed.`,
      });
    // What was shown or made, and its line in the activity log, in one transaction.
    const state = await withActivity(
      context.db,
      signedIn.user.merchantId,
      actorOf(signedIn.user, request),
      (trx) => then(endpoint, trx),
      () => ({ type, mode: signedIn.modes.mode, detail: { url: endpoint.url } }),
      context.now(),
    );
    return answerPage(context, reply, signedIn, 200, state);
  };

  post(
    `${PATH}/reveal`,
    'Shows the webhook key and signing secret after the user’s password (form post)',
    { 200: HTML_RESPONSE, 400: HTML_RESPONSE, 409: HTML_RESPONSE },
    (signedIn, fields, reply, request) =>
      withPassword(signedIn, fields, reply, request, 'webhook_secret_revealed', async (endpoint) => ({
        revealed: { webhookKey: endpoint.webhookKey, signingSecret: endpoint.signingSecret },
      })),
  );

  post(
    `${PATH}/rotate`,
    'Replaces the webhook key and signing secret after the user’s password, and shows the new ones (form post)',
    { 200: HTML_RESPONSE, 400: HTML_RESPONSE, 409: HTML_RESPONSE },
    async (signedIn, fields, reply, request) => {
      let overlapHours: number;
      try {
        overlapHours = checkOverlapHours(fields.overlap);
      } catch (error) {
        if (!(error instanceof WebhookSettingsError)) throw error;
        return answerPage(context, reply, signedIn, 400, {
          invalid: 'overlap',
          problem: `Old secret signs too for: give a whole number of hours from 0 to ${MAX_OVERLAP_HOURS} (7 days). Nothing was changed.`,
        });
      }
      return withPassword(signedIn, fields, reply, request, 'webhook_secret_rotated', async (endpoint, trx) => ({
        notice: overlapHours
          ? `New key and signing secret made: update your receiver. Deliveries carry signatures with the new and the old secret for ${overlapHours} hour${overlapHours === 1 ? '' : 's'}.`
          : 'New key and signing secret made: update your receiver. The old secret no longer signs.',
        revealed: await setWebhook(
          trx,
          context.config.secretKey,
          signedIn.user.merchantId,
          { url: endpoint.url, rotate: true, overlapHours },
          signedIn.modes.mode,
          context.now(),
        ),
      }));
    },
  );

  post(
    `${PATH}/mail`,
    'Saves which email notices the signed-in user receives, and their summary (form post)',
    { 400: HTML_RESPONSE },
    async (signedIn, fields, reply, request) => {
      const preferences = readNoticeForm(formValues(request, 'notices'), fields.summary);
      if ('invalid' in preferences)
        return answerPage(context, reply, signedIn, 400, {
          noticeInvalid: preferences.invalid,
          problem:
            preferences.invalid === 'notices'
              ? 'Email notices: choose among the notices listed. Nothing was saved.'
              : 'Summary: choose no summary, daily or weekly. Nothing was saved.',
        });
      await savePreferences(context.db, signedIn.user.id, preferences, context.now());
      return reply.redirect(`${PATH}?mail=1#email-notices`, 303);
    },
  );

  post(
    `${PATH}/test`,
    'Queues a webhook.test event to the merchant’s endpoint (form post)',
    { 303: { description: 'Queued: back to the page' }, 409: HTML_RESPONSE, 429: HTML_RESPONSE },
    async (signedIn, _fields, reply, request) => {
      try {
        await limitTestEvents(context.db, context.config, signedIn.user.merchantId, context.now());
        await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => sendTestEvent(trx, signedIn.modes.mode, signedIn.user.merchantId, context.now()),
          (sent) => ({ type: 'webhook_test_sent', mode: signedIn.modes.mode, detail: { event: sent.eventId } }),
          context.now(),
        );
      } catch (error) {
        if (error instanceof TillError && error.code === 'no_webhook_endpoint')
          return answerPage(context, reply, signedIn, 409, { problem: 'No webhook URL is set yet: save one first.' });
        if (error instanceof TillError && error.code === 'rate_limited') {
          const wait = error.retryAfterSeconds ?? 60;
          reply.header('retry-after', String(wait));
          return answerPage(context, reply, signedIn, 429, {
            problem: `Test events are limited to ${context.config.webhookTestEventsPerHour} an hour: try again in ${Math.ceil(wait / 60)} minute${Math.ceil(wait / 60) === 1 ? '' : 's'}.`,
          });
        }
        throw error;
      }
      context.webhookWake.notify();
      return reply.redirect(`${PATH}?sent=1`, 303);
    },
  );

  post(
    `${PATH}/events/{eventId}/redeliver`,
    'Sends one of the merchant’s webhook events again, as a new delivery (form post)',
    { 303: { description: 'Queued: back to the page' }, 404: HTML_RESPONSE, 409: HTML_RESPONSE },
    async (signedIn, _fields, reply, request) => {
      try {
        const { eventId } = request.params as { eventId: string };
        await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => redeliverEvent(trx, signedIn.modes.mode, eventId, signedIn.user.merchantId),
          () => ({ type: 'webhook_redelivered', mode: signedIn.modes.mode, detail: { event: eventId } }),
          context.now(),
        );
      } catch (error) {
        if (error instanceof TillError && error.code === 'not_found')
          return answerPage(context, reply, signedIn, 404, { problem: 'No such event: it is not one of your account’s.' });
        if (error instanceof TillError && error.code === 'no_webhook_endpoint')
          return answerPage(context, reply, signedIn, 409, { problem: 'No webhook URL is set yet: save one first.' });
        throw error;
      }
      context.webhookWake.notify();
      return reply.redirect(`${PATH}?redelivered=1`, 303);
    },
  );
}
