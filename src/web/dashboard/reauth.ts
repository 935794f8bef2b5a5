import type { FastifyRequest } from 'fastify';
import { clearFailures, emailSubject, ipSubject, recordFailure, waitBeforeAttempt } from '../../accounts/throttle.ts';
import { checkPassword } from '../../accounts/users.ts';
import type { SignedIn } from '../../accounts/web-session.ts';
import type { AppContext } from '../../context.ts';

/**
 * Whether the signed-in user re-entered their own password, for the dashboard's sensitive changes
 * (payout wallet, password). A wrong one counts as a failed sign-in of that email and IP, so the
 * sign-in throttle slows and locks guessing here too. Undefined when right, else the refusal.
 */
export async function passwordRefusal(
  context: AppContext,
  request: FastifyRequest,
  signedIn: SignedIn,
  password: string | undefined,
): Promise<string | undefined> {
  const subjects = [emailSubject(signedIn.user.email), ipSubject(request.ip)];
  const now = context.now();
  const wait = await waitBeforeAttempt(context.db, subjects, now);
  if (wait > 0) return `has been tried too many times; try again in ${Math.max(1, Math.ceil(wait / 60_000))} minute(s)`;
  if (!password) return 'must be given: enter your current password';
  const user = await checkPassword(context.db, signedIn.user.email, password);
  if (user?.id !== signedIn.user.id) {
    await recordFailure(context.db, subjects, now);
    return 'is not right';
  }
  await clearFailures(context.db, subjects[0]!);
  return undefined;
}
