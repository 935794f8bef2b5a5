import type { FastifyReply } from 'fastify';

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Pages carry no inline script and load nothing from elsewhere. Their forms post here only; a page
 * whose form post is answered with a redirect elsewhere names that origin in `formTargets` (browsers
 * hold the redirect to form-action too).
 */
export const pageCsp = (formTargets: string[] = []) =>
  `default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action ${["'self'", ...formTargets].join(' ')}; frame-ancestors 'none'; base-uri 'none'`;

export const PAGE_CSP = pageCsp();

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
.tag-opt-in{background:#fef3c7;color:#78350f}.tag-granted{background:#dcfce7;color:#14532d}
.actions{display:flex;gap:.75rem;flex-wrap:wrap}.actions button{min-width:7rem}
button.danger{background:#fff;color:#b91c1c;border-color:#b91c1c}button.danger:hover{background:#fef2f2}
.problem{padding:.6rem .9rem;border:1px solid #b91c1c;border-radius:6px;background:#fef2f2;color:#7f1d1d;max-width:24rem}
.done{padding:.6rem .9rem;border:1px solid #15803d;border-radius:6px;background:#f0fdf4;color:#14532d}
h1{line-height:1.2}main.consent{max-width:42rem;margin:0 auto}.consent .client{color:#1d4ed8}
.scope-list{list-style:none;margin:0;padding:0}.scope-list code{white-space:nowrap;overflow-wrap:normal}
.grants td:last-child{min-width:0}.grants th,.grants time{white-space:nowrap}.grants td code{overflow-wrap:break-word}
@media (max-width:40rem){h1{font-size:1.6rem}
.grants,.grants tbody,.grants tr,.grants td{display:block;overflow:visible}.grants thead{display:none}
.grants tr{border:1px solid #e4e4e7;border-radius:6px;padding:.5rem .75rem;margin:.75rem 0}.grants td{border:0;padding:.2rem 0}
.grants td[data-label]::before{content:attr(data-label);display:block;color:#52525b;font-size:13px;font-weight:600}.grants .scope-list li{display:inline;margin-right:.35rem}}

.dashboard-header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.5rem;border-bottom:1px solid #e4e4e7;padding-bottom:.5rem;margin-bottom:1rem}
.dashboard-header .brand{margin:0;font-weight:700}.dashboard-header .brand a{text-decoration:none;color:#1a1a1a}
.dashboard-header nav ul{margin:0}.dashboard-header a[aria-current=page]{font-weight:700;color:#1a1a1a;text-decoration-thickness:2px}
.dashboard-header .sign-out{margin-left:auto;display:flex;gap:.5rem;align-items:center}
.sandbox-banner{margin:0 0 1rem;padding:.6rem .9rem;border:2px solid #a16207;border-radius:6px;background:#fef9c3;color:#422006}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;list-style:none}
.attention{padding:.6rem .9rem;border:1px solid #b45309;border-radius:6px;background:#fffbeb;color:#451a03}
.address{overflow-wrap:anywhere}.field input.mono{font:13px ui-monospace,monospace;padding:.7rem}.field input.short{max-width:8rem}
.field .hint{display:block}.field-problem{display:block;margin-top:.25rem;color:#b91c1c;font-weight:600}input[aria-invalid=true]{border-color:#b91c1c;border-width:2px}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.75rem;margin:1rem 0}.stat{border:1px solid #e4e4e7;border-radius:6px;padding:.6rem .9rem}
.stat dt{color:#52525b;font-size:13px;font-weight:600}.stat dd{margin:0}.stat strong{display:block;font-size:1.4rem}
.chart{margin:1rem 0;max-width:40rem}.chart svg{display:block;width:100%;height:9rem}.chart .bar{fill:#1d4ed8}.chart .bar-empty{fill:#d4d4d8}.chart .axis{stroke:#71717a;stroke-width:1}
.chart-axis{display:flex;justify-content:space-between;gap:.5rem;flex-wrap:wrap;color:#52525b;font-size:13px}
.setup{padding-left:0;list-style:none}.setup li{margin:.5rem 0}.setup li.attention{list-style:none}
.choices{list-style:none;padding:0;margin:0}.choices li{display:flex;gap:.6rem;align-items:center;padding:.25rem 0}.choices input{width:1.15rem;height:1.15rem;margin:0}
.visually-hidden{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
.copy{margin:.75rem 0}.copy-row{display:flex;gap:.5rem;align-items:center;max-width:36rem}.copy-row input:not([type=hidden]){max-width:none;flex:1;min-width:0;margin:0;font:13px ui-monospace,monospace}
.secret{padding:.25rem 1rem .75rem;border:2px solid #15803d;border-radius:6px;background:#f0fdf4;margin:1rem 0}.secret h3{margin-top:.5rem}
.link-form{max-width:36rem}.link-form p{margin:.75rem 0}.link-form .note{display:block;font-weight:400}.choice{display:flex;gap:.5rem;align-items:flex-start}.choice label{font-weight:400}
.choice input[type=radio],.choice input[type=checkbox]{display:inline-block;box-sizing:border-box;width:1.1rem;height:1.1rem;max-width:none;margin:.3rem 0 0;padding:0;flex:none}
.link-form details{margin:1rem 0}.link-form summary{cursor:pointer;font-weight:600;color:#1d4ed8}.link-form summary:focus-visible{outline:2px solid #1d4ed8;outline-offset:2px}
.link-form input[aria-invalid=true]{border-color:#b91c1c;border-width:2px}
.facts{display:flex;flex-wrap:wrap;gap:.5rem 2rem;margin:1rem 0}.facts dt{color:#52525b;font-size:13px}.facts dd{margin:0;font-weight:600}
.qr{margin:1rem 0}.qr svg{width:12rem;height:12rem;display:block}.qr figcaption{color:#52525b;font-size:13px}
.cards td code,.cards td a{overflow-wrap:anywhere}.keys-heading{margin-bottom:.25rem}
@media (max-width:40rem){.cards,.cards tbody,.cards tr,.cards td{display:block;overflow:visible}.cards thead{display:none}
.cards tr{border:1px solid #e4e4e7;border-radius:6px;padding:.5rem .75rem;margin:.75rem 0}.cards td{border:0;padding:.2rem 0}
.cards td[data-label]::before{content:attr(data-label);display:block;color:#52525b;font-size:13px;font-weight:600}}
.filters{display:flex;flex-wrap:wrap;gap:0 1rem;align-items:flex-end}.filters p{margin:.4rem 0}.filters input:not([type=hidden]){width:11rem}.filters .actions{align-items:center}
select{display:block;margin-top:.25rem;padding:.5rem .6rem;border:1px solid #71717a;border-radius:6px;font:inherit;background:#fff}select:focus-visible{outline:2px solid #1d4ed8;outline-offset:2px}
.cards td:last-child{min-width:0}.cards td:first-child code{white-space:normal;overflow-wrap:anywhere}.cards time,.cards .nowrap,.cards .nowrap code{white-space:nowrap;overflow-wrap:normal}.cards caption{text-align:left}.pager{display:flex;gap:1rem;margin:1rem 0}
@media (max-width:40rem){.filters{display:block}.filters input:not([type=hidden]){width:100%}
.cards,.cards tbody,.cards tr,.cards td{display:block;overflow:visible}.cards thead{display:none}
.cards tr{border:1px solid #e4e4e7;border-radius:6px;padding:.5rem .75rem;margin:.75rem 0}.cards td{border:0;padding:.2rem 0;overflow-wrap:anywhere}
.cards td[data-label]::before{content:attr(data-label);display:block;color:#52525b;font-size:13px;font-weight:600}.cards caption{display:block}}
.deliveries{list-style:none;padding:0}.delivery{border:1px solid #e4e4e7;border-radius:6px;padding:.25rem .9rem .75rem;margin:.75rem 0}
.attempts{margin:.25rem 0 .5rem;padding-left:1.25rem}.attempts li{margin:.25rem 0}.excerpt{display:block;margin-top:.2rem;white-space:pre-wrap}
.secrets dd{margin:0 0 .75rem}.secrets code{overflow-wrap:anywhere}.checks li{padding:.3rem 0}
`;

export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><link rel="stylesheet" href="${STYLESHEET_PATH}"></head><body>${body}</body></html>`;
}

/** Answers an HTML page, never cached (pages carry forms with tokens and who is signed in). */
export const sendPage = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(body);

/** Content negotiation for pages that also answer JSON: a browser asks for text/html before JSON. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html !== -1 && (json === -1 || html < json);
}
