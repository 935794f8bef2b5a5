import { escapeHtml } from '../../http/html.ts';

/** A moment as people read it, in UTC, with its machine-readable form. */
export function moment(ms: number | null): string {
  if (ms === null) return 'Never';
  const iso = new Date(ms).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`;
}

/** The hidden CSRF field of a dashboard form. */
export const csrfInput = (token: string) => `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;

/** A long id or digest shortened for a table cell, the whole in its title. */
export const shortened = (value: string, head = 8, tail = 4) =>
  value.length > head + tail + 1
    ? `<code title="${escapeHtml(value)}">${escapeHtml(value.slice(0, head))}…${escapeHtml(value.slice(-tail))}</code>`
    : `<code>${escapeHtml(value)}</code>`;
