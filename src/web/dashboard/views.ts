import { type Html, html, joinHtml } from '../kit/html.ts';

/** A moment as people read it, in UTC, with its machine-readable form. */
export function moment(ms: number | null): Html {
  if (ms === null) return html`Never`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`;
}

/** The hidden CSRF field of a dashboard form. */
export const csrfInput = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

/** A long id or digest shortened for a table cell, the whole in its title. */
export const shortened = (value: string, head = 8, tail = 4): Html =>
  value.length > head + tail + 1 ? html`<code title="${value}">${value.slice(0, head)}…${value.slice(-tail)}</code>` : html`<code>${value}</code>`;

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
}): Html {
  const query = new URLSearchParams(Object.entries(view.filter).filter(([, value]) => value !== ''));
  const fragment = view.fragment ? `#${view.fragment}` : '';
  const links = [
    view.paged ? html`<a href="${view.path}${query.size ? `?${query.toString()}` : ''}${fragment}">Newest</a>` : undefined,
    view.next === undefined
      ? undefined
      : html`<a rel="next" href="${view.path}?${new URLSearchParams([...query, ['after', view.next]]).toString()}${fragment}">${view.older}</a>`,
  ].filter((link) => link !== undefined);
  return links.length ? html`<nav aria-label="${view.label}" class="pager">${joinHtml(links, html` `)}</nav>` : html``;
}

/** The answer of a list page whose filter cannot be read. */
export const FILTER_REFUSED = { description: 'A filter field cannot be read: the page names it' };
