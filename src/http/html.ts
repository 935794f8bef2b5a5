/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Pages carry no inline script and load nothing from elsewhere. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The page policy for a page whose form, posted to us, is answered with a redirect elsewhere (the
 * consent screen sends its answer on to the client): browsers hold that redirect to form-action too.
 * Only a plain http(s) origin is added.
 */
export function pageCspWithFormTarget(url: string): string {
  const { origin } = new URL(url);
  if (!/^https?:\/\/[a-z0-9.\-[\]:]+$/i.test(origin)) return PAGE_CSP;
  return PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${origin}`);
}

export const STYLESHEET_PATH = '/assets/till.css';

export const STYLESHEET = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
a{color:#1d4ed8}a:focus-visible{outline:2px solid #1d4ed8;outline-offset:2px}
code,pre{font:13px ui-monospace,monospace;background:#f4f4f5;border-radius:4px;overflow-wrap:anywhere}pre{padding:.75rem;overflow:auto}code{padding:.1rem .3rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border-bottom:1px solid #e4e4e7;padding:.35rem .5rem;text-align:left;vertical-align:top}th{font-weight:600}
@media (max-width:40rem){table{display:block;overflow-x:auto}}
h2{margin-top:2.5rem;border-bottom:2px solid #e4e4e7;padding-bottom:.25rem}h3{margin-top:2rem}h4{margin:1rem 0 .25rem}small{color:#52525b;font-weight:400}
.method{display:inline-block;min-width:3.5rem;padding:.05rem .4rem;border-radius:4px;font:700 13px ui-monospace,monospace;text-align:center;color:#fff;background:#3f3f46}
.method-get{background:#1d4ed8}.method-post{background:#15803d}.method-put{background:#b45309}.method-delete{background:#b91c1c}
.operation,.schema{border-top:1px solid #e4e4e7}.note{color:#52525b;font-size:13px}
td:first-child code{white-space:nowrap;overflow-wrap:normal}td:last-child{min-width:10rem}

input:not([type=hidden]):not([type=checkbox]){display:block;box-sizing:border-box;width:100%;max-width:24rem;margin-top:.25rem;padding:.55rem .7rem;border:1px solid #71717a;border-radius:6px;font:inherit}
label{font-weight:600}input:focus-visible,button:focus-visible{outline:2px solid #1d4ed8;outline-offset:2px}
button{padding:.55rem 1.1rem;border:1px solid #1d4ed8;border-radius:6px;background:#1d4ed8;color:#fff;font:600 15px/1.4 system-ui,sans-serif;cursor:pointer}
button.secondary{background:#fff;color:#1d4ed8}
fieldset{border:1px solid #e4e4e7;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}legend{font-weight:600;padding:0 .25rem}
.scopes{list-style:none;padding:0;margin:0}.scopes li{display:flex;gap:.6rem;align-items:flex-start;padding:.5rem 0;border-bottom:1px solid #f4f4f5}.scopes li:last-child{border-bottom:0}
.scopes input{width:1.15rem;height:1.15rem;margin:.2rem 0 0;flex:none}.scopes .line{font-weight:400;color:#3f3f46}
.tag{display:inline-block;margin-left:.35rem;padding:0 .4rem;border-radius:4px;background:#f4f4f5;color:#3f3f46;font:600 12px/1.6 system-ui,sans-serif}
.actions{display:flex;gap:.75rem;flex-wrap:wrap}
.problem{padding:.6rem .9rem;border:1px solid #b91c1c;border-radius:6px;background:#fef2f2;color:#7f1d1d;max-width:24rem}

.sandbox-banner{margin:0 0 1rem;padding:.6rem .9rem;border:2px solid #a16207;border-radius:6px;background:#fef9c3;color:#422006}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;list-style:none}
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
