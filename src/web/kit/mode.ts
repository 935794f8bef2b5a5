import type { FastifyReply, FastifyRequest } from 'fastify';
import { secureCookies } from '../../accounts/web-session.ts';
import { type KeyMode, keyModeOf, type Mode, modeOfKey } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { readCookies, setCookie } from '../../http/forms.ts';

/**
 * The cookie that remembers which mode a browser's dashboard shows: `test` or `live`, as API keys
 * name them. Not a secret and not a permission: it only picks which of the signed-in user's own
 * data is shown, among the modes the deployment serves.
 */
export const MODE_COOKIE = 'till_mode';
const MODE_COOKIE_SECONDS = 365 * 24 * 60 * 60;

/** The mode a deployment's dashboard opens in: live when it serves live, else test. */
export const defaultMode = (served: readonly Mode[]): Mode => (served.includes('live') ? 'live' : 'sandbox');

/**
 * The mode the signed-in user is viewing: the browser's choice (the `till_mode` cookie) when the
 * deployment serves it, else live when served, else test. Every dashboard page, and the consent page,
 * reads and writes the data of this mode only; so does the consent page, which gives an agent
 * access to this mode's data.
 */
export function viewedMode(context: AppContext, request: FastifyRequest): Mode {
  const served = context.config.modes;
  const chosen = readCookies(request)[MODE_COOKIE];
  if (chosen === 'test' || chosen === 'live') {
    const mode = modeOfKey(chosen);
    if (served.includes(mode)) return mode;
  }
  return defaultMode(served);
}

/** What the layout needs to draw the switch: the mode shown and the modes the deployment serves. */
export type ModeView = { mode: Mode; served: readonly Mode[] };

export const modeView = (context: AppContext, request: FastifyRequest): ModeView => ({ mode: viewedMode(context, request), served: context.config.modes });

/** Remembers the browser's choice (HttpOnly, SameSite=Lax, Secure over https). */
export function rememberViewedMode(context: AppContext, reply: FastifyReply, mode: Mode): void {
  setCookie(reply, MODE_COOKIE, keyModeOf(mode), { secure: secureCookies(context), maxAgeSeconds: MODE_COOKIE_SECONDS });
}

/** The key mode of the viewed mode: keys the dashboard makes are of the mode shown. */
export const viewedKeyMode = (context: AppContext, request: FastifyRequest): KeyMode => keyModeOf(viewedMode(context, request));
