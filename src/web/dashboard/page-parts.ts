import type { FastifyInstance } from 'fastify';
import { escapeHtml } from '../../http/html.ts';

/** The dashboard's one script, served from our origin: copy buttons and selecting a secret shown once. Pages work without it. */
export const DASHBOARD_SCRIPT_PATH = '/assets/dashboard.js';

const SCRIPT = `(function(){
for(const field of document.querySelectorAll('input[data-select]')){field.focus();field.select();}
for(const button of document.querySelectorAll('button[data-copy]')){
const field=document.getElementById(button.dataset.copy);const label=button.textContent;if(!field)continue;
button.hidden=false;
button.addEventListener('click',async()=>{field.select();
try{await navigator.clipboard.writeText(field.value);button.textContent='Copied';}catch{button.textContent='Press Ctrl+C to copy';}
setTimeout(()=>{button.textContent=label;},2000);});}
})();`;

export function registerDashboardScript(app: FastifyInstance): void {
  app.get(DASHBOARD_SCRIPT_PATH, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(SCRIPT),
  );
}

/** The script tag pages with copy buttons end with. */
export const DASHBOARD_SCRIPT = `<script src="${DASHBOARD_SCRIPT_PATH}" defer></script>`;

/**
 * A value to copy: a labelled read-only field (selectable by hand without script) and a Copy button
 * that the script reveals.
 */
export function copyField(id: string, label: string, value: string, options: { select?: boolean } = {}): string {
  return `<div class="copy"><label for="${id}">${escapeHtml(label)}</label><span class="copy-row"><input id="${id}" type="text" readonly value="${escapeHtml(value)}" spellcheck="false"${options.select ? ' data-select' : ''}><button type="button" class="secondary" data-copy="${id}" hidden>Copy</button></span></div>`;
}

/** A moment as a `<time>`: date and minute in UTC, or "never". */
export function moment(iso: string | number | null): string {
  if (iso === null) return 'never';
  const text = new Date(iso).toISOString();
  return `<time datetime="${text}">${text.slice(0, 10)} ${text.slice(11, 16)} UTC</time>`;
}

/** A form post's hidden CSRF field. */
export const csrfInput = (token: string) => `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;
