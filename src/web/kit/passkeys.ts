import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RelyingParty } from '../../accounts/passkeys.ts';
import { secureCookies } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { clearCookie, cookieName, readCookies, setCookie } from '../../http/forms.ts';
import { assetHref } from './assets.ts';
import { type Html, html } from './html.ts';

/** The pages' passkey script (kit/browser/passkeys.ts). */
export const passkeyScript = (): Html => html`<script src="${assetHref('passkeys.js')}" defer></script>`;

export const relyingParty = (context: AppContext): RelyingParty => ({ baseUrl: context.config.baseUrl, secretKey: context.config.secretKey });

/** The sealed challenge of a passkey ceremony under way, in its own short cookie. */
const ceremonyCookie = (context: AppContext) => cookieName('till_webauthn', secureCookies(context));

export function keepCeremony(context: AppContext, reply: FastifyReply, sealed: string): void {
  setCookie(reply, ceremonyCookie(context), sealed, { secure: secureCookies(context), maxAgeSeconds: 300 });
}

/** The ceremony's sealed challenge, forgotten as it is read: each is answered once. */
export function takeCeremony(context: AppContext, request: FastifyRequest, reply: FastifyReply): string | undefined {
  const sealed = readCookies(request)[ceremonyCookie(context)];
  clearCookie(reply, ceremonyCookie(context), { secure: secureCookies(context) });
  return sealed;
}

/** The browser's answer to a ceremony, from the form's `response` field; undefined when it is not JSON (no script ran). */
export function ceremonyAnswer(value: string | undefined): unknown {
  if (!value) return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return undefined;
  }
}
