import { attemptSucceeded, reauthSubject, reserveAttempt, secondFactorSubject } from '../../accounts/throttle.ts';
import { checkSecondFactorCode } from '../../accounts/two-factor.ts';
import { secondFactorGiven } from '../../accounts/user-sessions.ts';
import { checkPassword } from '../../accounts/users.ts';
import type { SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';
import { type Html, html } from './html.ts';

/**
 * Whether the signed-in user re-entered their own password, for the dashboard's sensitive changes
 * (payout wallet, password). Each try is counted against this user's re-checks before the password
 * is checked (the sign-in throttle's rules), so guessing here slows and locks too, while failures
 * at the sign-in page, anyone's, never lock the re-check. Undefined when right, else the refusal.
 */
export async function passwordRefusal(context: AppContext, signedIn: SignedIn, password: string | undefined): Promise<string | undefined> {
  if (!password) return 'must be given: enter your current password';
  const subjects = [reauthSubject(signedIn.user.id)];
  const wait = await reserveAttempt(context.db, subjects, context.now());
  if (wait > 0) return `has been tried too many times; try again in ${Math.max(1, Math.ceil(wait / 60_000))} minute(s)`;
  const user = await checkPassword(context.db, signedIn.user.email, password);
  if (user?.id !== signedIn.user.id) return 'is not right';
  await attemptSucceeded(context.db, subjects);
  return undefined;
}

/** How long a second factor given in this browser (at sign-in or a step-up) counts as fresh for a sensitive change. */
export const STEP_UP_FRESH_MS = 5 * 60_000;

/** The form field of a step-up's code. */
export const STEP_UP_FIELD = 'second_factor_code';
export const STEP_UP_LABEL = 'Two-factor code';

/** Whether a sensitive change by this user needs a second factor now: the user has one and has not given it in the last few minutes here. */
export function stepUpDue(signedIn: SignedIn, now: number): boolean {
  const at = signedIn.session.secondFactorAt;
  return signedIn.secondFactor.enrolled && (at === null || now - at > STEP_UP_FRESH_MS);
}

/**
 * The step-up of a sensitive change (payout wallet, API keys, a coding agent's consent, a role):
 * undefined when the user has no second factor or gave it here in the last few minutes, else the
 * code typed (`second_factor_code`: the authenticator's or a recovery code) is checked, counted
 * against the user's second-factor guesses first; a right one makes the browser fresh again. A
 * passkey step-up is its own request (the account page's script), after which this answers
 * undefined. Undefined when allowed, else the refusal of the field.
 */
export async function stepUpRefusal(context: AppContext, signedIn: SignedIn, code: string | undefined): Promise<string | undefined> {
  if (!stepUpDue(signedIn, context.now())) return undefined;
  if (!code?.trim()) return 'must be given: this change needs your second factor (a code of your authenticator app, a recovery code, or a passkey)';
  const subjects = [secondFactorSubject(signedIn.user.id)];
  const now = context.now();
  const wait = await reserveAttempt(context.db, subjects, now);
  if (wait > 0) return `has been tried too many times; try again in ${Math.max(1, Math.ceil(wait / 60_000))} minute(s)`;
  const check = await checkSecondFactorCode(context.db, context.config.secretKey, signedIn.user.id, code, now);
  if ('refused' in check) return check.refused === 'replayed' ? 'was used already: wait for the next code' : 'is not right';
  await attemptSucceeded(context.db, subjects);
  await secondFactorGiven(context.db, signedIn.session.idHash, now);
  return undefined;
}

/** The step-up's field in a sensitive change's form (`form` makes its id unique on the page), when one is due (nothing otherwise). */
export function stepUpInput(signedIn: SignedIn, now: number, form: string, problem?: string, returnTo = '/dashboard/account/two-factor'): Html {
  if (!stepUpDue(signedIn, now)) return html``;
  // A passkey is confirmed on the second-factor page, which comes back here fresh.
  const passkey = signedIn.secondFactor.passkey
    ? html` <a href="/sign-in/second-factor?step_up=1&amp;return_to=${encodeURIComponent(returnTo)}">Confirm with a passkey instead</a>`
    : '';
  const id = `${form}-second-factor-code`;
  const described = problem ? `${id}-hint ${id}-problem` : `${id}-hint`;
  return html`<p class="field step-up"><label for="${id}">${STEP_UP_LABEL}</label><span id="${id}-hint" class="note hint">This change needs your second factor: the code your authenticator app shows now, or a recovery code.</span>
<input id="${id}" name="${STEP_UP_FIELD}" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="16" spellcheck="false" autocapitalize="off" class="short mono" aria-describedby="${described}"${problem ? html` aria-invalid="true" autofocus` : ''}>${problem ? html`<span id="${id}-problem" class="field-problem">${`${STEP_UP_LABEL} ${problem}.`}</span>` : ''}${passkey}</p>`;
}
