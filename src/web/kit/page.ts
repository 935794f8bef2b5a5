import type { FastifyReply } from 'fastify';
import { stylesheetHref } from './assets.ts';
import { FAVICON_HREF } from './favicon.ts';
import { type Html, html } from './html.ts';

// The pages' Content-Security-Policy and content negotiation are the framework edge's (http/ sets the
// policy on every HTML answer): the kit passes them on.
export { PAGE_CSP, pageCsp, prefersHtml } from '../../http/html.ts';

/** The route documentation of an answer that is a page. */
export const HTML_RESPONSE = { description: 'An HTML page' };

/** A whole page with the shared stylesheet (and what `head` adds after it: a merchant's brand stylesheet). */
export function page(title: string, body: Html, head: Html = html``): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title><link rel="icon" href="${FAVICON_HREF}" type="image/svg+xml"><link rel="stylesheet" href="${stylesheetHref()}">${head}</head><body>${body}</body></html>`;
}

/** Answers an HTML page, never cached (pages carry forms with tokens and who is signed in). */
export const sendPage = (reply: FastifyReply, status: number, body: Html) =>
  reply.code(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(String(body));
