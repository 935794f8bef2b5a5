/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Pages carry no inline script and load nothing from elsewhere. */
export const PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const STYLESHEET_PATH = '/assets/till.css';

export const STYLESHEET = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
code,pre{font:13px ui-monospace,monospace;background:#f4f4f5;border-radius:4px}pre{padding:.75rem;overflow:auto}code{padding:.1rem .3rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e4e4e7;padding:.35rem .5rem;text-align:left;vertical-align:top}
.method{font-weight:700;text-transform:uppercase}h2{margin-top:2.5rem}
`;

export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><link rel="stylesheet" href="${STYLESHEET_PATH}"></head><body>${body}</body></html>`;
}

/** Content negotiation for pages that also answer JSON: a browser asks for text/html before JSON. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html !== -1 && (json === -1 || html < json);
}
