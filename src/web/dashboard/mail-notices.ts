import type { Mode } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import type { MailKind, NoticeTopic } from '../../mail/kinds.ts';
import { listUndeliveredMails } from '../../mail/outbox.ts';
import type { NoticePreferences } from '../../mail/preferences.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { csrfInput, moment } from './views.ts';

/**
 * The Notifications page's mail: which notices the signed-in user receives (their own choice, saved
 * per user), and the merchant's mails that did not go, as `till mail list` shows them to operators.
 */

/** The mails not delivered the page shows, newest first. */
const UNDELIVERED_SHOWN = 25;

export const NOTICE_CHOICES: { topic: Exclude<NoticeTopic, 'summary'>; label: string }[] = [
  { topic: 'payments', label: 'A payment is received' },
  { topic: 'refunds', label: 'A refund succeeds or fails' },
  { topic: 'attention', label: 'A payment needs attention (pending too long, failed after settling, reversed)' },
  { topic: 'webhooks', label: 'Your webhook endpoint has been failing for a day' },
];
const SUMMARIES: { value: NoticePreferences['summary']; label: string }[] = [
  { value: 'off', label: 'No summary' },
  { value: 'daily', label: 'Daily, of the day before (UTC)' },
  { value: 'weekly', label: 'Weekly, on Mondays, of the week before' },
];

const KIND_NAMES: Record<MailKind, string> = {
  receipt: 'Receipt to a buyer',
  refund_receipt: 'Refund receipt to a buyer',
  invitation: 'Invitation to a team',
  sign_up: 'Sign-up confirmation link',
  sign_up_existing: 'Sign-up with an address that has an account',
  payment_received: 'Payment received',
  refund_succeeded: 'Refund succeeded',
  refund_failed: 'Refund failed',
  payment_attention: 'Payment needs attention',
  webhook_failing: 'Webhook endpoint failing',
  summary: 'Summary',
  password_reset: 'Password reset link',
  password_changed: 'Password changed',
  wallet_changed: 'Payout wallet changed',
};

/** The preferences a form post asks for, or the field it gets wrong. */
export function readNoticeForm(notices: string[], summary: string | undefined): NoticePreferences | { invalid: 'notices' | 'summary' } {
  const known = new Set<string>(NOTICE_CHOICES.map((choice) => choice.topic));
  if (notices.some((topic) => !known.has(topic))) return { invalid: 'notices' };
  const period = SUMMARIES.find((choice) => choice.value === summary)?.value;
  if (!period) return { invalid: 'summary' };
  const wanted = new Set(notices);
  return {
    payments: wanted.has('payments'),
    refunds: wanted.has('refunds'),
    attention: wanted.has('attention'),
    webhooks: wanted.has('webhooks'),
    summary: period,
  };
}

export function noticeSection(action: string, email: string, preferences: NoticePreferences, csrf: string, invalid?: 'notices' | 'summary'): Html {
  const aria = (field: 'notices' | 'summary') => (invalid === field ? html` aria-invalid="true"` : '');
  const boxes = NOTICE_CHOICES.map(
    ({ topic, label }) =>
      html`<li><input type="checkbox" id="mail-${topic}" name="notices" value="${topic}"${preferences[topic] ? html` checked` : ''}${aria('notices')}> <label for="mail-${topic}">${label}</label></li>`,
  );
  const radios = SUMMARIES.map(
    ({ value, label }) =>
      html`<p class="choice"><input type="radio" id="mail-summary-${value}" name="summary" value="${value}"${preferences.summary === value ? html` checked` : ''}${aria('summary')}> <label for="mail-summary-${value}">${label}</label></p>`,
  );
  return html`<h2 id="email-notices">Email notices</h2>
<p>Mails to you, <strong>${email}</strong>, about this account; your colleagues choose their own. Each notice has an unsubscribe link too. Security mails (password reset, password or payout wallet changed) always come.</p>
<form method="post" action="${action}">${csrfInput(csrf)}
<fieldset><legend>Mail me when</legend><ul class="scopes checks">${boxes}</ul></fieldset>
<fieldset><legend>Summary of payments and refunds</legend>${radios}</fieldset>
<p><button type="submit">Save email notices</button></p></form>`;
}

/** The merchant's mails of this mode that did not go: to whom, what, the SMTP server's answer, and whether it is tried again. */
export async function undeliveredSection(context: Pick<AppContext, 'db'>, mode: Mode, merchantId: string): Promise<Html> {
  const mails = await listUndeliveredMails(context.db, { merchantId, mode, limit: UNDELIVERED_SHOWN });
  const rows = joinHtml(
    mails.map(
      (mail) => html`<tr><td data-label="Queued">${moment(mail.createdAt)}</td>
<td data-label="Mail">${KIND_NAMES[mail.data.kind]}</td>
<td data-label="To">${mail.recipient}</td>
<td data-label="Status">${mail.nextAttemptAt === null ? html`<strong>Failed</strong>, not tried again` : html`Retrying, next attempt ${moment(mail.nextAttemptAt)}`} (${mail.attempts} attempt${mail.attempts === 1 ? '' : 's'})</td>
<td data-label="Error"><code class="excerpt">${mail.lastError ?? ''}</code></td></tr>`,
    ),
    html`\n`,
  );
  const body = mails.length
    ? html`<table class="cards undelivered"><caption class="note">Newest first, the ${UNDELIVERED_SHOWN} latest</caption><thead><tr><th scope="col">Queued</th><th scope="col">Mail</th><th scope="col">To</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead><tbody>
${rows}</tbody></table>`
    : html`<p>None: no mail of this account has failed.</p>`;
  return html`<h2 id="undelivered-mail">Mails not delivered</h2>
<p class="note">Receipts and notices the mail server refused or did not answer: Till tries each again for about two days, then gives up. Your operator sees them with <code>till mail list</code>.</p>
${body}`;
}
