import QRCode from 'qrcode';
import { MAX_ADDRESS } from '../../mail/address.ts';
import type { Brand } from '../../merchants/brand.ts';
import { formatMinor } from '../../money/decimal.ts';
import { currencyExponent, formatMoney } from '../../money/iso4217.ts';
import { formatUsdc } from '../../money/usdc.ts';
import { redirectUrlFor } from '../../sessions/views.ts';
import { FACILITATOR_MIN_AMOUNT } from '../../x402/protocol.ts';
import type { SessionToQuote } from '../../x402/quotes.ts';
import { assetHref } from '../kit/assets.ts';
import { brandHead, brandLogo } from '../kit/brand.ts';
import { type Html, html, joinHtml, trusted } from '../kit/html.ts';
import type { CheckoutState } from './state.ts';

/**
 * `sandbox`: the session is a test-mode one (its own mode decides, not the deployment's): the page
 * says so and offers the sandbox wallet. `branding`: the session's merchant's brand, and its
 * business name (the logo's text).
 */
type View = { baseUrl: string; sandbox: boolean; branding?: { brand: Brand; businessName: string } };

const TEST_BANNER = html`<p class="sandbox-banner" role="note"><strong>Test payment — no real money.</strong> The USDC on this page is a test token worth nothing, on a test chain.</p>`;

/** `0x1234…abcd`: enough of an address to recognise it, the whole of it in the title. */
export function shortAddress(address: string): string {
  return address.length > 12 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;
}

/** `https://shop.example/ok?paymentSessionId=…&publicOrderId=…`: the session's own success URL with the two parameters added. */
export function successTarget(successUrl: string, sessionId: string, publicOrderId: string): string | null {
  if (!URL.canParse(successUrl)) return null;
  const url = new URL(successUrl);
  url.searchParams.set('paymentSessionId', sessionId);
  url.searchParams.set('publicOrderId', publicOrderId);
  return url.toString();
}

/** Time left for people to read: "2 h 5 min", "14 min", "45 s". */
export function timeLeft(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

function shell(title: string, view: View, main: Html, scripts: Html = html``): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${title}</title><link rel="stylesheet" href="${assetHref('checkout.css')}">${brandHead(view.branding?.brand)}</head><body>${view.sandbox && TEST_BANNER}<main id="checkout" class="card">${view.branding && brandLogo(view.branding.brand, view.branding.businessName)}${main}</main>${scripts}</body></html>`;
}

function heading(session: SessionToQuote): Html {
  const reference = [
    session.concept ? html`${session.concept}` : null,
    session.order_id ? html`<span class="nowrap">Order ${session.order_id}</span>` : null,
  ].filter((part): part is Html => part !== null);
  return html`<p class="merchant">${session.merchant_name}</p>${reference.length > 0 && html`<p class="concept">${joinHtml(reference, html` · `)}</p>`}`;
}

const returnLink = (url: string | null, label: string) => url && html`<p class="actions"><a class="button secondary" href="${url}">${label}</a></p>`;

/** A final page with no payment to make: unknown, expired, no wallet, no rate, paid. */
function finalPage(title: string, view: View, body: Html): Html {
  return shell(title, view, body);
}

/**
 * The QR code of the page's own URL, as inline SVG. The markup is the `qrcode` library's output for a
 * URL Till built itself (the base URL and a session id): only `<svg>`, `<path>` and their numeric
 * attributes, no text from the request. It is markup, not text, so it goes in with `trusted`.
 */
async function qrCode(url: string): Promise<Html> {
  const svg = await QRCode.toString(url, { type: 'svg', margin: 1, errorCorrectionLevel: 'M', color: { dark: '#000000', light: '#ffffff' } });
  return trusted(svg.replace('<svg ', '<svg role="img" aria-labelledby="qr-caption" focusable="false" '));
}

function payablePage(state: Extract<CheckoutState, { kind: 'payable' }>, view: View, now: number, qr: Html): Html {
  const { session, quote, payTo, asset, rails } = state;
  const exponent = currencyExponent(session.currency) ?? 2;
  const editable = session.editable === 1;
  const amountText = formatMoney(quote.amount_minor, session.currency);
  const usdc = formatUsdc(quote.usdc_amount);
  const countdown =
    session.order_type === 'TRANSIENT' &&
    session.expires_at !== null &&
    html`<div><dt>Time left</dt><dd><span id="countdown" role="timer" data-expires-at="${new Date(session.expires_at).toISOString()}">${timeLeft(session.expires_at - now)}</span></dd></div>`;
  const minText = session.min_amount_minor === null ? '' : formatMinor(session.min_amount_minor, exponent);
  const amountForm =
    editable &&
    html`<form id="amount-form" class="amount-form" novalidate><input type="hidden" name="uid" value="${session.id}"><label for="amount">Amount to pay (${session.currency})</label><div class="amount-row"><input id="amount" name="amount" type="text" inputmode="decimal" autocomplete="off" required value="${formatMinor(quote.amount_minor, exponent)}" aria-describedby="amount-help"${minText && html` data-min="${minText}"`}><button type="submit" class="secondary">Update</button></div><p id="amount-help" class="help">${minText ? html`At least ${formatMoney(session.min_amount_minor!, session.currency)}.` : 'Choose the amount you want to pay.'}</p></form>`;
  // What the page's script reads, as data attributes of #pay-data: each value escaped by `html`
  // like any other attribute value (the script reads them back through `dataset`).
  const data = {
    'session-id': session.id,
    'pay-url': `/x402/session/${encodeURIComponent(session.id)}`,
    'success-url': session.success_url ?? '',
    'fail-url': session.fail_url ?? '',
    'cancel-url': session.cancel_url ?? '',
    asset,
    'pay-to': payTo,
    usdc: quote.usdc_amount.toString(),
    amount: formatMinor(quote.amount_minor, exponent),
    'chain-id': String(rails.network.chainId),
    'rpc-url': rails.walletRpcUrl,
    editable: editable ? 'true' : 'false',
    currency: session.currency,
    exponent: String(exponent),
  };
  // Shown by the page's script (without it the page cannot pay, and "Email me the receipt" is the way once paid).
  const receiptEmail = html`<div id="receipt-email-field" class="receipt-email" hidden><label for="receipt-email">Email for your receipt (optional)</label><input id="receipt-email" name="email" type="email" autocomplete="email" spellcheck="false" maxlength="${MAX_ADDRESS}" aria-describedby="receipt-email-help"><p id="receipt-email-help" class="help">We email you the receipt once you have paid. Leave it empty for none.</p></div>`;
  const attributes = Object.entries(data).map(([name, value]) => html` data-${name}="${value}"`);
  const body = html`<div class="layout"${attributes} id="pay-data"><section class="details" aria-labelledby="title">
${heading(session)}<h1 id="title">Pay <span id="amount-text">${amountText}</span></h1>
${amountForm}
<dl class="summary">
<div><dt>You pay</dt><dd><strong><span id="usdc-text">${usdc}</span> USDC</strong></dd></div>
<div><dt>Network</dt><dd>${rails.network.name} (chain id ${rails.network.chainId})</dd></div>
<div><dt>Paid to</dt><dd><code title="${payTo}">${shortAddress(payTo)}</code></dd></div>
${countdown}
</dl>
${receiptEmail}
<section class="pay" aria-labelledby="pay-title">
<h2 id="pay-title">Pay with a wallet</h2>
<noscript><p class="notice">Paying from this page needs JavaScript. An x402 client can pay <code>${`${view.baseUrl}/x402/session/${session.id}`}</code>.</p></noscript>
<p id="wallet-hint" class="help">Looking for a browser wallet…</p>
<ul id="wallets" class="wallets"></ul>
<p id="status" class="status" role="status" aria-live="polite"></p>
<div id="outcome" class="outcome" tabindex="-1" hidden></div>
</section>
${session.cancel_url && html`<p class="actions"><a id="cancel" class="button secondary" href="${session.cancel_url}">Cancel and return to the merchant</a></p>`}
</section>
<aside class="qr" aria-label="Open this page on your phone">${qr}<p id="qr-caption" class="help">Scan to open this page in your phone's wallet browser.</p></aside></div>`;
  const scripts = html`<script src="${assetHref('checkout.js')}" defer></script>${view.sandbox && html`<script src="${assetHref('checkout-sandbox-wallet.js')}" defer></script>`}`;
  return shell(`Pay ${session.merchant_name}`, view, body, scripts);
}

/** The whole HTML page of a checkout state. */
export async function renderCheckout(state: CheckoutState, view: View, now: number): Promise<Html> {
  switch (state.kind) {
    case 'unknown':
      return finalPage(
        'Payment not found',
        view,
        html`<h1>Payment not found</h1><p>There is no payment with this link. Check the link the shop gave you, or go back to the shop and start again.</p>`,
      );
    case 'expired':
      return finalPage(
        'Payment expired',
        view,
        html`${heading(state.session)}<h1>This payment has expired</h1><p>Nothing was charged. Go back to the shop to start a new payment.</p>${returnLink(state.session.cancel_url, 'Return to the merchant')}`,
      );
    case 'paid': {
      const { session, payment } = state;
      const orderId = payment.public_order_id ?? '';
      const receipt = `/checkout/v2/orders/receipt/${encodeURIComponent(orderId)}`;
      const back = session.success_url && successTarget(session.success_url, session.id, orderId);
      // The heading says what happened ("Paid 3.00 USD"), never what to do. The receipt is the primary
      // action, a button in the accent (white on it, checked when the accent is set); no text is
      // drawn in the accent on the tinted box, where its contrast was never checked.
      return finalPage(
        'Paid',
        view,
        html`${heading(session)}<h1>Paid ${formatMoney(payment.amount_minor, payment.currency)}</h1><div class="outcome success"><p>This payment is complete: ${formatMoney(payment.amount_minor, payment.currency)} paid with ${formatUsdc(payment.value)} USDC. There is nothing more to pay.</p><p class="actions"><a class="button" href="${receipt}">View the receipt</a>${back && html`<a class="button secondary" href="${back}">Return to the merchant</a>`}</p><p class="help">Receipt number <code>${orderId}</code></p></div>`,
      );
    }
    case 'no_wallet':
      return finalPage(
        'Payment not possible yet',
        view,
        html`${heading(state.session)}<h1>This shop can't take this payment yet</h1><p>${state.session.merchant_name} hasn't set up where payments go, so there is no way to pay this yet. Nothing was charged. Please let the shop know; they can fix it in a minute.</p>${returnLink(state.session.cancel_url, 'Return to the merchant')}`,
      );
    case 'below_minimum':
      return finalPage(
        'Payment not possible',
        view,
        html`${heading(state.session)}<h1>This amount is too small to pay in USDC</h1><p>${formatMoney(state.session.amount_minor, state.session.currency)} is less than ${formatUsdc(FACILITATOR_MIN_AMOUNT)} USDC, the smallest payment the payment network settles. Nothing was charged. Please let the shop know.</p>${returnLink(state.session.cancel_url, 'Return to the merchant')}`,
      );
    case 'rate_unavailable':
      return finalPage(
        'Try again shortly',
        view,
        html`${heading(state.session)}<h1>We can't price this payment right now</h1><p>There is no up-to-date USDC exchange rate for ${state.session.currency} at the moment. Nothing was charged. Please try again in a minute.</p><p class="actions"><a class="button" href="${redirectUrlFor('', state.session.id)}">Try again</a></p>`,
      );
    case 'busy':
      return finalPage(
        'Try again shortly',
        view,
        html`${heading(state.session)}<h1>Too many requests for this payment</h1><p>This payment was asked for too often in the last minute. Nothing was charged. Please try again in a minute.</p><p class="actions"><a class="button" href="${redirectUrlFor('', state.session.id)}">Try again</a></p>`,
      );
    case 'unavailable':
      return finalPage(
        'Payments unavailable',
        view,
        html`${heading(state.session)}<h1>Payments are not available</h1><p>This service has no payment network configured, so the payment can't be made here. Nothing was charged.</p>${returnLink(state.session.cancel_url, 'Return to the merchant')}`,
      );
    case 'payable':
      return payablePage(state, view, now, await qrCode(redirectUrlFor(view.baseUrl, state.session.id)));
  }
}
