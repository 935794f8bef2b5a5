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

/**
 * The links of a list paged by cursor: "Newest" once past the first page, and the older page when
 * there is one. `filter` is the list's query (empty values dropped); `next` the older page's cursor.
 */
export function cursorPager(view: {
  path: string;
  filter: Record<string, string>;
  paged: boolean;
  next: string | undefined;
  older: string;
  label: string;
  fragment?: string;
}): string {
  const query = new URLSearchParams(Object.entries(view.filter).filter(([, value]) => value !== ''));
  const fragment = view.fragment ? `#${view.fragment}` : '';
  const links = [
    view.paged ? `<a href="${view.path}${query.size ? `?${escapeHtml(query.toString())}` : ''}${fragment}">Newest</a>` : '',
    view.next === undefined
      ? ''
      : `<a rel="next" href="${view.path}?${escapeHtml(new URLSearchParams([...query, ['after', view.next]]).toString())}${fragment}">${view.older}</a>`,
  ].filter(Boolean);
  return links.length ? `<nav aria-label="${escapeHtml(view.label)}" class="pager">${links.join(' ')}</nav>` : '';
}

/** The answer of a list page whose filter cannot be read. */
export const FILTER_REFUSED = { description: 'A filter field cannot be read: the page names it' };
