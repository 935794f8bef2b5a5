import type { Db } from '../../db/index.ts';
import type { MailContent, MailData, OutboxMail, PaymentFacts, RefundFacts } from '../../mail/kinds.ts';
import { TOPIC_OF } from '../../mail/kinds.ts';
import { unsubscribeUrl } from '../../mail/unsubscribe.ts';
import { type Brand, findBrand } from '../../merchants/brand.ts';
import { logoPath } from '../kit/brand.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';

/**
 * Every mail in words: one structure per kind (subject, heading, lines, rows, a button), put into an
 * HTML part and a plain-text part by one layout. The HTML is made with the kit's `html` tag, which
 * escapes every value; styles are inline (mail clients drop stylesheets), nothing is loaded but the
 * merchant's logo (the same URL for every recipient: no tracking pixel).
 */
type MailText = {
  subject: string;
  heading: string;
  lines: string[];
  rows: [string, string][];
  action?: { href: string; text: string };
  /** Below the rest, small. */
  notes: string[];
};

export type MailRenderContext = { db: Db; baseUrl: string; secretKey: Buffer };

export const TEST_MONEY = 'Test payment — no real money';
const TILL_BLUE = '#1d4ed8';

const receiptUrl = (baseUrl: string, publicOrderId: string | null) => (publicOrderId ? `${baseUrl}/checkout/v2/orders/receipt/${publicOrderId}` : undefined);

const shortAddress = (address: string) => (address.length > 14 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address);

const when = (at: number) => `${new Date(at).toISOString().replace('T', ' ').slice(0, 16)} UTC`;

/** The rows that say which payment a mail is about. */
function paymentRows(payment: PaymentFacts): [string, string][] {
  const rows: [string, string][] = [['Amount', payment.amount]];
  if (payment.concept) rows.push(['For', payment.concept]);
  if (payment.orderId) rows.push(['Order', payment.orderId]);
  rows.push(['Paid in USDC', `${payment.tokenAmount} USDC`]);
  if (payment.publicOrderId) rows.push(['Payment', payment.publicOrderId]);
  rows.push(['Date', when(payment.at)]);
  return rows;
}

function refundRows(refund: RefundFacts): [string, string][] {
  const rows: [string, string][] = [
    ['Refund', refund.refundAmount],
    ['In USDC', `${refund.refundTokenAmount} USDC`],
    ['Of the payment', `${refund.amount}${refund.publicOrderId ? ` (${refund.publicOrderId})` : ''}`],
  ];
  if (refund.reason) rows.push(['Reason', refund.reason]);
  rows.push(['To', shortAddress(refund.payer)], ['Date', when(refund.at)]);
  return rows;
}

/** What each kind of mail says. */
function wordsOf(data: MailData, baseUrl: string): MailText {
  switch (data.kind) {
    case 'receipt': {
      const { payment } = data;
      const receipt = receiptUrl(baseUrl, payment.publicOrderId);
      return {
        subject: `Your receipt from ${payment.merchantName}: ${payment.amount}`,
        heading: `Thank you for your payment to ${payment.merchantName}`,
        lines: [`${payment.merchantName} received your payment of ${payment.amount}.`],
        rows: paymentRows(payment),
        ...(receipt ? { action: { href: receipt, text: 'View your receipt' } } : {}),
        notes: payment.txUrl ? [`The transaction on the chain: ${payment.txUrl}`] : [],
      };
    }
    case 'refund_receipt': {
      const { refund } = data;
      return {
        subject: `Your refund from ${refund.merchantName}: ${refund.refundAmount}`,
        heading: `${refund.merchantName} refunded you ${refund.refundAmount}`,
        lines: [`${refund.refundTokenAmount} USDC went back to the wallet you paid from.`],
        rows: refundRows(refund),
        ...(refund.txUrl ? { action: { href: refund.txUrl, text: 'See the refund on the chain' } } : {}),
        notes: [],
      };
    }
    case 'payment_received': {
      const { payment } = data;
      return {
        subject: `Payment received: ${payment.amount}${payment.concept ? ` for ${payment.concept}` : payment.orderId ? ` for order ${payment.orderId}` : ''}`,
        heading: `You received ${payment.amount}`,
        lines: [`A buyer paid ${payment.tokenAmount} USDC to your payout wallet.`],
        rows: [...paymentRows(payment), ['From', shortAddress(payment.payer)]],
        action: { href: `${baseUrl}/dashboard/orders`, text: 'Open your orders' },
        notes: [],
      };
    }
    case 'refund_succeeded':
    case 'refund_failed': {
      const { refund } = data;
      const succeeded = data.kind === 'refund_succeeded';
      return {
        subject: succeeded ? `Refund sent: ${refund.refundAmount}` : `Refund failed: ${refund.refundAmount}`,
        heading: succeeded ? `Your refund of ${refund.refundAmount} went through` : `Your refund of ${refund.refundAmount} did not go through`,
        lines: succeeded
          ? [`${refund.refundTokenAmount} USDC went from your payout wallet back to the buyer.`]
          : [`Nothing left your payout wallet. ${refund.failure ? `Why: ${refund.failure}.` : ''} You can refund the payment again.`],
        rows: refundRows(refund),
        action: { href: `${baseUrl}/dashboard/orders`, text: 'Open your orders' },
        notes: [],
      };
    }
    case 'payment_attention': {
      const { payment } = data;
      return {
        subject: `A payment needs your attention: ${payment.amount} is ${data.status}`,
        heading: `A payment of ${payment.amount} is ${data.status}`,
        lines: [data.detail],
        rows: paymentRows(payment),
        action: { href: `${baseUrl}/dashboard/orders`, text: 'Open your orders' },
        notes: [],
      };
    }
    case 'webhook_failing':
      return {
        subject: 'Your webhook endpoint has been failing for 24 hours',
        heading: 'Your server has not accepted webhooks for a day',
        lines: [
          `Till has been sending ${data.merchantName}'s payment events to ${data.url} since ${when(data.failingSince)} without an HTTP 200 answer.`,
          'Events are retried for about three days; fix the endpoint, then redeliver the failed ones from the dashboard.',
        ],
        rows: [
          ['Endpoint', data.url],
          ['Deliveries failing', String(data.failed)],
        ],
        action: { href: `${baseUrl}/dashboard/notifications`, text: 'See the deliveries' },
        notes: [],
      };
    case 'summary':
      return {
        subject: `Your ${data.period} summary: ${data.payments} payment${data.payments === 1 ? '' : 's'}`,
        heading: `${data.merchantName}: your ${data.period === 'daily' ? 'day' : 'week'}`,
        lines: [`From ${when(data.from)} to ${when(data.to)}.`],
        rows: [
          ['Payments', String(data.payments)],
          ...data.totals.map((total): [string, string] => ['Received', total.amount]),
          ['Refunds', String(data.refunds)],
        ],
        action: { href: `${baseUrl}/dashboard`, text: 'Open the dashboard' },
        notes: [],
      };
    case 'password_reset':
      return {
        subject: 'Reset your Till password',
        heading: 'Reset your password',
        lines: [`Someone (we hope you) asked to reset the password of ${data.email}.`, `The link works once, until ${when(data.expiresAt)} (30 minutes).`],
        rows: [],
        action: { href: data.link, text: 'Choose a new password' },
        notes: ['If you did not ask for this, ignore this mail: your password stays as it is.'],
      };
    case 'sign_up':
      return {
        subject: 'Confirm your Till account',
        heading: `Confirm the account of ${data.businessName}`,
        lines: [
          `Someone (we hope you) signed up for a Till merchant account for ${data.businessName} with this address.`,
          `The link works once, until ${when(data.expiresAt)} (24 hours): it opens the account and signs you in.`,
        ],
        rows: [['Business', data.businessName]],
        action: { href: data.link, text: 'Confirm and open the dashboard' },
        notes: ['If you did not sign up, ignore this mail: no account is made unless the link is used.'],
      };
    case 'sign_up_existing':
      return {
        subject: 'You already have a Till account',
        heading: 'You already have a Till account',
        lines: [
          `Someone (we hope you) tried to sign up for a new Till merchant account with ${data.email}, which already signs in to Till, so no account was made.`,
          'Sign in with it, or choose a new password if you forgot it.',
        ],
        rows: [],
        action: { href: `${baseUrl}/sign-in`, text: 'Sign in' },
        notes: [`Forgot the password? ${baseUrl}/sign-in/forgot`, 'If it was not you, ignore this mail: nothing was changed.'],
      };
    case 'invitation':
      return {
        subject: `Join ${data.merchantName} on Till`,
        heading: `You are invited to ${data.merchantName}`,
        lines: [
          `${data.invitedBy ?? 'The operator'} invites you to the Till dashboard of ${data.merchantName}, as ${data.role}.`,
          `The link works once, until ${when(data.expiresAt)} (7 days): you choose your password there.`,
        ],
        rows: [
          ['Business', data.merchantName],
          ['Role', data.role],
        ],
        action: { href: data.link, text: 'Accept the invitation' },
        notes: ['If you did not expect this, ignore this mail: nothing happens unless the link is used.'],
      };
    case 'password_changed':
      return {
        subject: 'Your Till password was changed',
        heading: 'Your password was changed',
        lines: [`The password of ${data.email} was changed on ${when(data.at)}, and every other signed-in browser was signed out.`],
        rows: [],
        action: { href: `${baseUrl}/sign-in/forgot`, text: 'Not you? Reset it now' },
        notes: ['If it was not you, reset the password with the link above and tell your operator.'],
      };
    case 'wallet_changed':
      return {
        subject: `${data.merchantName}'s payout wallet was changed`,
        heading: 'Your payout wallet was changed',
        lines: [
          data.wallet
            ? `Payments to ${data.merchantName} now go to ${data.wallet}.`
            : `${data.merchantName} has no payout wallet now: buyers cannot pay until one is set.`,
        ],
        rows: [
          ['New wallet', data.wallet ?? 'none'],
          ['Previous wallet', data.previous ?? 'none'],
          ['Date', when(data.at)],
        ],
        action: { href: `${baseUrl}/dashboard/settings`, text: 'Check your settings' },
        notes: ['If you did not make this change, sign in, set your own wallet back and reset your password at once.'],
      };
  }
}

/** Mails about a payment or refund made in test mode say so, in the subject and at the top. */
const aboutTestMoney = (mail: OutboxMail) =>
  mail.mode === 'sandbox' &&
  ['receipt', 'refund_receipt', 'payment_received', 'refund_succeeded', 'refund_failed', 'payment_attention', 'summary'].includes(mail.data.kind);

const merchantOf = (data: MailData): string | undefined => {
  if ('payment' in data) return data.payment.merchantId;
  if ('refund' in data) return data.refund.merchantId;
  return undefined;
};

/** The HTML part: a card on a grey ground, the merchant's logo and accent where it has them. */
function htmlPart(
  words: MailText,
  view: { test: boolean; brand: Brand | undefined; merchantName: string | undefined; baseUrl: string; unsubscribe: string | undefined },
): Html {
  const accent = view.brand?.accentColor ?? TILL_BLUE;
  const logo = view.brand?.logo
    ? html`<img src="${view.baseUrl}${logoPath(view.brand.logo.hash)}" alt="${view.merchantName ?? ''}" height="40" style="height:40px;width:auto;display:block;margin:0 0 16px">`
    : html``;
  const rows = words.rows.length
    ? html`<table role="presentation" style="width:100%;border-collapse:collapse;margin:16px 0">${joinHtml(
        words.rows.map(
          ([label, value]) =>
            html`<tr><td style="padding:6px 12px 6px 0;color:#4b5563;vertical-align:top;white-space:nowrap">${label}</td><td style="padding:6px 0;color:#111827;word-break:break-word">${value}</td></tr>`,
        ),
      )}</table>`
    : html``;
  const banner = view.test
    ? html`<p style="margin:0 0 16px;padding:8px 12px;background:#fef3c7;color:#78350f;border-radius:6px;font-weight:600">${TEST_MONEY}</p>`
    : html``;
  const action = words.action
    ? html`<p style="margin:24px 0"><a href="${words.action.href}" style="display:inline-block;padding:12px 20px;background:${accent};color:#ffffff;text-decoration:none;border-radius:6px;font-weight:600">${words.action.text}</a></p><p style="margin:0 0 16px;font-size:13px;color:#4b5563;word-break:break-all">Or open: ${words.action.href}</p>`
    : html``;
  const footer = view.unsubscribe
    ? html`<p style="margin:0">You receive this notice as a user of ${view.merchantName ?? 'a Till merchant'}. <a href="${view.unsubscribe}" style="color:#4b5563">Unsubscribe from these notices</a>.</p>`
    : html`<p style="margin:0">Sent by Till${view.merchantName ? html` for ${view.merchantName}` : ''}.</p>`;
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${words.subject}</title></head><body style="margin:0;padding:0;background:#f3f4f6;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;line-height:1.5;color:#111827"><div style="max-width:560px;margin:0 auto;padding:24px 12px"><div style="background:#ffffff;border-radius:8px;border-top:4px solid ${accent};padding:24px;overflow-wrap:anywhere">${logo}${banner}<h1 style="margin:0 0 12px;font-size:22px;line-height:1.3">${words.heading}</h1>${joinHtml(words.lines.map((line) => html`<p style="margin:0 0 12px">${line}</p>`))}${rows}${action}${joinHtml(words.notes.map((note) => html`<p style="margin:0 0 12px;font-size:14px;color:#4b5563;word-break:break-word">${note}</p>`))}</div><div style="padding:16px 12px;font-size:13px;color:#4b5563">${footer}</div></div></body></html>`;
}

function textPart(words: MailText, view: { test: boolean; merchantName: string | undefined; unsubscribe: string | undefined }): string {
  const width = Math.max(0, ...words.rows.map(([label]) => label.length));
  return [
    ...(view.test ? [TEST_MONEY.toUpperCase(), ''] : []),
    words.heading,
    '',
    ...words.lines.flatMap((line) => [line, '']),
    ...(words.rows.length ? [...words.rows.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}`), ''] : []),
    ...(words.action ? [`${words.action.text}: ${words.action.href}`, ''] : []),
    ...words.notes.flatMap((note) => [note, '']),
    '-- ',
    view.unsubscribe
      ? `You receive this notice as a user of ${view.merchantName ?? 'a Till merchant'}. Unsubscribe: ${view.unsubscribe}`
      : `Sent by Till${view.merchantName ? ` for ${view.merchantName}` : ''}.`,
    '',
  ].join('\n');
}

/** A mail as it is sent: subject, both parts, and on a notice the List-Unsubscribe headers of RFC 8058. */
export async function renderMail(context: MailRenderContext, mail: OutboxMail): Promise<MailContent> {
  const words = wordsOf(mail.data, context.baseUrl);
  const test = aboutTestMoney(mail);
  const merchantId = merchantOf(mail.data) ?? mail.merchantId ?? undefined;
  const brand = merchantId ? await findBrand(context.db, merchantId) : undefined;
  const data = mail.data as { payment?: PaymentFacts; refund?: RefundFacts; merchantName?: string };
  const merchantName = data.payment?.merchantName ?? data.refund?.merchantName ?? data.merchantName;
  const topic = TOPIC_OF[mail.data.kind];
  const unsubscribe = topic && mail.userId ? unsubscribeUrl(context.baseUrl, context.secretKey, mail.userId, topic) : undefined;
  return {
    subject: test ? `${TEST_MONEY}: ${words.subject}` : words.subject,
    text: textPart(words, { test, merchantName, unsubscribe }),
    html: String(htmlPart(words, { test, brand, merchantName, baseUrl: context.baseUrl, unsubscribe })),
    headers: unsubscribe ? { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {},
  };
}
