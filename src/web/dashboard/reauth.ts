import { attemptSucceeded, reauthSubject, reserveAttempt } from '../../accounts/throttle.ts';
import { checkPassword } from '../../accounts/users.ts';
import type { SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';

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
