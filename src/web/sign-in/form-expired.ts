import type { FastifyReply } from 'fastify';
import { type Html, html } from '../kit/html.ts';
import { page, sendPage } from '../kit/page.ts';

/** The 403 page of a signed-out form posted without its form token (or with an old one), saying what to do instead. */
export const sendFormExpired = (reply: FastifyReply, title: string, advice: Html) =>
  sendPage(reply, 403, page(title, html`<main><h1>This form has expired</h1>${advice}</main>`));
