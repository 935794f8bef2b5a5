/**
 * Pages carry no inline script and load nothing from elsewhere. Their forms post here only; a page
 * whose form post is answered with a redirect elsewhere names that origin in `formTargets` (browsers
 * hold the redirect to form-action too).
 */
export const pageCsp = (formTargets: string[] = []) =>
  `default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action ${["'self'", ...formTargets].join(' ')}; frame-ancestors 'none'; base-uri 'none'`;

export const PAGE_CSP = pageCsp();

/** The shared stylesheet's stable URL (src/web/kit/till.css, built by `npm run build`; pages under web/ link its hashed URL). */
export const STYLESHEET_PATH = '/assets/till.css';

/**
 * The framework edge's one page, with no value in it: the database cannot be reached (pages for
 * people are rendered by web/, with its kit, which escapes every value).
 */
export const UNREACHABLE_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Back in a moment</title><link rel="stylesheet" href="${STYLESHEET_PATH}"></head><body><main><h1>Back in a moment</h1><p>This page cannot be shown just now: the service cannot reach its records.</p><p>Nothing you did was lost. Reload the page in a few seconds.</p></main></body></html>`;

/** Content negotiation for pages that also answer JSON: a browser asks for text/html before JSON. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html !== -1 && (json === -1 || html < json);
}
