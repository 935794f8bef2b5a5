import { assetHref } from '../kit/assets.ts';
import { type Html, html } from '../kit/html.ts';

/**
 * The script tag pages with copy buttons end with: the dashboard's one script (copy buttons,
 * selecting a secret shown once; `browser/dashboard.ts`, a built asset). Pages work without it.
 */
export const dashboardScript = (): Html => html`<script src="${assetHref('dashboard.js')}" defer></script>`;

/**
 * A value to copy: a labelled read-only field (selectable by hand without script) and a Copy button
 * that the script reveals.
 */
export function copyField(id: string, label: string, value: string, options: { select?: boolean } = {}): Html {
  return html`<div class="copy"><label for="${id}">${label}</label><span class="copy-row"><input id="${id}" type="text" readonly value="${value}" spellcheck="false"${options.select ? html` data-select` : ''}><button type="button" class="secondary" data-copy="${id}" hidden>Copy</button></span></div>`;
}

/** A moment as a `<time>`: date and minute in UTC, or "never". */
export function moment(iso: string | number | null): Html {
  if (iso === null) return html`never`;
  const text = new Date(iso).toISOString();
  return html`<time datetime="${text}">${text.slice(0, 10)} ${text.slice(11, 16)} UTC</time>`;
}

/** A form post's hidden CSRF field. */
export const csrfInput = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;
