import { html as escapingHtml, raw as trustedHtml } from 'hono/html';

/**
 * HTML that is safe to send: made by the `html` tag, which escapes every value put into it (text,
 * numbers, arrays of either) unless that value is itself `Html`. A page is built only from `Html`,
 * so XSS safety never rests on remembering to escape. The tag is Hono's (`hono/html`): a small,
 * well-kept implementation, synchronous for the values pages use.
 */
export type Html = ReturnType<typeof trustedHtml>;

/** Escapes every interpolated value that is not already `Html`; `false`, `null` and `undefined` render nothing. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const rendered = escapingHtml(strings, ...values);
  if (rendered instanceof Promise) throw new TypeError('pages render synchronously: a Promise was put into html``');
  return rendered;
}

/**
 * The one way to send markup that did not come from `html`: text Till produced itself and has checked
 * (a generated SVG, a bundled script's JSON). Allowed only inside `web/kit/` and the files its
 * architecture test lists, so every use is reviewed.
 */
export function trusted(markup: string): Html {
  return trustedHtml(markup);
}

/** Joins fragments without escaping them again (they are `Html` already). */
export function joinHtml(parts: readonly Html[], separator: Html = html``): Html {
  return trustedHtml(parts.map(String).join(String(separator)));
}
