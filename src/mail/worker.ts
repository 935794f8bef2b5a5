import type { AppContext } from '../context.ts';
import type { MailContent, OutboxMail } from './kinds.ts';
import { countMailsByStatus, leaseDueMails, type MailResult, recordMailResult } from './outbox.ts';
import { createMailTransport, type MailTransport } from './transport.ts';

/** Puts a mail into words: both parts, the subject and a notice's headers. */
export type RenderMail = (mail: OutboxMail) => Promise<MailContent>;

/** A periodic look for what causes mails without a change to hang them on (a payment PENDING too long, a summary's day). */
export type MailPass = { name: string; intervalMs: number; run(now: number): Promise<void> };

export type MailWorkerOptions = {
  render: RenderMail;
  /** Where mails go; by default the SMTP server of TILL_SMTP_URL, and none (mails kept) without it. */
  transport?: MailTransport | undefined;
  pollIntervalMs?: number;
  /** How long a lease is exclusive: longer than a whole SMTP conversation may take (ten of its steps' timeout unless given). */
  leaseMs?: number;
  concurrency?: number;
  /** Delay before each retry; when it runs out the mail is FAILED. */
  retrySchedule?: readonly number[];
  random?: () => number;
  passes?: readonly MailPass[];
};

export type MailWorker = { stop(): Promise<void>; wake(): void };

/** About two days: 1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 12 h, 24 h. */
export const MAIL_RETRY_SCHEDULE = [60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000];

type WorkerContext = Pick<AppContext, 'config' | 'db' | 'dbKind' | 'log' | 'metrics' | 'now'>;

/**
 * Sends the outbox: leases due mails in a short transaction, hands each to the SMTP server after the
 * lease has committed, and records the result only while the lease holds. A mail the server refuses,
 * or that times out or loses its connection, stays PENDING with the error and is retried on the
 * schedule (±10 %), then FAILED. Without an SMTP server every mail is kept (KEPT), never sent.
 * A crash after the server took a mail and before that was recorded sends it again under the same
 * Message-ID; nothing else sends one cause twice (the outbox holds one row per cause and recipient).
 */
export function startMailWorker(context: WorkerContext, options: MailWorkerOptions): MailWorker {
  const log = context.log.child({ component: 'mail' });
  const transport = 'transport' in options ? options.transport : createMailTransport(context.config.mail);
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const leaseMs = options.leaseMs ?? context.config.mail.timeoutMs * 10;
  const concurrency = options.concurrency ?? 8;
  const schedule = options.retrySchedule ?? MAIL_RETRY_SCHEDULE;
  const random = options.random ?? Math.random;
  const held = new Set<string>();
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;

  context.metrics.sources.mailsByStatus = () => countMailsByStatus(context.db);

  const decide = (mail: OutboxMail, error: unknown, now: number): MailResult => {
    const message = error instanceof Error ? error.message : String(error);
    const step = schedule[mail.attempts - 1];
    if (step === undefined) return { status: 'FAILED', error: `${message}; not sent after ${mail.attempts} attempts` };
    return { status: 'PENDING', error: message, retryAt: now + Math.round(step * (0.95 + random() * 0.1)) };
  };

  async function handle(mail: OutboxMail): Promise<void> {
    let result: MailResult;
    try {
      if (!transport) result = { status: 'KEPT' };
      else {
        const content = await options.render(mail);
        await transport.send({ ...content, id: mail.id, to: mail.recipient });
        result = { status: 'SENT' };
      }
    } catch (error) {
      result = decide(mail, error, context.now());
      log.warn({ mailId: mail.id, kind: mail.data.kind, attempt: mail.attempts, err: error, status: result.status }, 'a mail was not sent');
    }
    try {
      if (await recordMailResult(context.db, mail.id, mail.attempts, result, context.now()))
        context.metrics.mailAttempts.inc({ outcome: result.status === 'PENDING' ? 'retry' : result.status.toLowerCase() });
    } catch (error) {
      // Left leased: tried again once the lease ends (the same Message-ID, if it went out).
      log.error({ mailId: mail.id, err: error }, 'a mail result could not be recorded');
    } finally {
      held.delete(mail.id);
    }
  }

  async function drainDue(): Promise<void> {
    do {
      again = false;
      const room = concurrency - held.size;
      if (room <= 0) return;
      const leased = await leaseDueMails(context.db, context.dbKind === 'postgres', room, leaseMs, context.now(), held);
      for (const mail of leased) held.add(mail.id);
      await Promise.all(leased.map(handle));
      if (leased.length === room) again = true;
    } while (again && !stopped);
  }

  function wake(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drainDue()
      .catch((error: unknown) => log.error({ err: error }, 'leasing mails failed'))
      .finally(() => {
        running = undefined;
      });
  }

  const poll = setInterval(wake, pollIntervalMs);
  const passTimers = (options.passes ?? []).map((pass) => {
    let busy = false;
    return setInterval(() => {
      if (busy || stopped) return;
      busy = true;
      pass
        .run(context.now())
        .catch((error: unknown) => log.error({ err: error, pass: pass.name }, 'a mail pass failed'))
        .finally(() => {
          busy = false;
        });
    }, pass.intervalMs);
  });
  wake();

  return {
    wake,
    async stop() {
      stopped = true;
      clearInterval(poll);
      for (const timer of passTimers) clearInterval(timer);
      await running;
      transport?.close();
    },
  };
}
