import { type Html, html } from './html.ts';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** A moment as people read it, in UTC: "25 November 2026, 20:55 UTC". */
export function readableUtc(ms: number): string {
  const date = new Date(ms);
  const minute = date.toISOString().slice(11, 16);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}, ${minute} UTC`;
}

/** The same as a `<time>` with its machine-readable form. */
export const readableTime = (ms: number): Html => html`<time datetime="${new Date(ms).toISOString()}">${readableUtc(ms)}</time>`;
