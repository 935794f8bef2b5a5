import type { Config } from '../config.ts';
import type { OutboxMail } from '../mail/kinds.ts';
import { listMails } from '../mail/outbox.ts';
import { checkSmtpConversation } from '../mail/transport.ts';
import type { Check } from './live-checks.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

const STATUSES: readonly OutboxMail['status'][] = ['PENDING', 'SENT', 'FAILED', 'KEPT'];
const USAGE = 'usage: till mail list [--status PENDING|SENT|FAILED|KEPT] [--merchant MERCHANT_ID] [--limit N] [--json]';

/** `till mail list`: the outbox, newest first: what each mail is, to whom, and whether it went (or why not). */
export async function mailCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub !== 'list') throw new UsageError(USAGE);
  const status = takeOption(args, '--status')?.toUpperCase();
  const merchantId = takeOption(args, '--merchant');
  const limitText = takeOption(args, '--limit');
  noneLeft(args);
  if (status !== undefined && !STATUSES.includes(status as OutboxMail['status'])) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`);
  const limit = limitText === undefined ? 50 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError('--limit must be a whole number from 1 to 10000');
  const mails = await withDatabase(async ({ db }) =>
    (
      await listMails(db, {
        limit,
        ...(status ? { status: status as OutboxMail['status'] } : {}),
        ...(merchantId ? { merchantId } : {}),
      })
    ).map((mail) => ({
      id: mail.id,
      kind: mail.data.kind,
      mode: mail.mode,
      to: mail.recipient,
      merchantId: mail.merchantId,
      status: mail.status,
      attempts: mail.attempts,
      lastError: mail.lastError,
      createdAt: new Date(mail.createdAt).toISOString(),
      sentAt: mail.sentAt === null ? null : new Date(mail.sentAt).toISOString(),
    })),
  );
  const lines = mails.map(
    (mail) =>
      `${mail.createdAt}  ${mail.status.padEnd(7)}  ${mail.kind.padEnd(16)}  ${mail.to}  ${mail.id}${mail.attempts ? `  attempts ${mail.attempts}` : ''}${mail.lastError ? `\n    last error: ${mail.lastError}` : ''}`,
  );
  printResult(json, { mails }, mails.length ? lines.join('\n') : 'No mail.');
}

/**
 * `till doctor`'s look at mail: a real SMTP conversation up to RCPT (nothing is sent). Without
 * TILL_SMTP_URL nothing is refused: mails are kept, seen on the sandbox's mail page and by till mail list.
 */
export async function smtpCheck(config: Config): Promise<Check> {
  const { mail } = config;
  if (!mail.smtp)
    return {
      name: 'mail',
      status: 'ok',
      detail: config.modes.includes('live')
        ? 'no SMTP server (TILL_SMTP_URL): no mail is sent — receipts, notices and password resets are kept and listed by till mail list'
        : 'no SMTP server: mails are kept and shown at /sandbox/mail (and by till mail list), never sent',
    };
  const problem = await checkSmtpConversation(mail);
  return problem
    ? {
        name: 'mail',
        status: 'failed',
        detail: `${mail.smtpShown}: ${problem}`,
        fix: 'check TILL_SMTP_URL (host, port, user and password) and that the server accepts TILL_MAIL_FROM as a sender',
        setting: 'TILL_SMTP_URL',
      }
    : { name: 'mail', status: 'ok', detail: `${mail.smtpShown} took MAIL FROM and RCPT TO ${mail.from} (nothing was sent)` };
}
