// The outbox killed mid-send: a `till serve` child process is SIGKILLed while the SMTP server is
// reading a mail, and right after it has taken one (before the child could record it), again and
// again, then restarted. Every mail arrives; no cause is sent as two messages (a copy sent again
// after a kill is the same message, with the row's Message-ID).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ServingProcess, serveTill } from '../testing/child-process.ts';
import { freePort } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { startSmtpServer, type TestSmtpServer } from '../testing/smtp.ts';
import { waitFor } from '../testing/wait.ts';
import { listMails, queueMail } from './outbox.ts';

const CLI = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
const MAILS = 300;
const FROM_DOMAIN = 'shop.example';
/** Arrivals at which the child is killed: even ones while the server reads the mail, odd ones just after it took it. */
const KILLS = [20, 61, 110, 151, 200, 241];

for (const { engine, skip } of engines) {
  describeOnEngine(`mail outbox survives SIGKILL on ${engine}`, skip, () => {
    let service: TestService;
    let smtp: TestSmtpServer;
    before(async () => {
      smtp = await startSmtpServer();
      service = await startTestService(engine);
    });
    after(async () => {
      await smtp?.close();
      await service?.stop();
    });

    test(`${MAILS} mails, till serve killed ${KILLS.length} times mid-send and restarted: every mail sent, none twice per cause`, async (t) => {
      const { merchantId } = await service.merchant();
      await service.context.db.transaction().execute(async (trx) => {
        for (let i = 0; i < MAILS; i++)
          await queueMail(
            trx,
            {
              mode: 'sandbox',
              merchantId,
              userId: null,
              cause: `crash:${i}`,
              recipient: `buyer${i}@example.org`,
              data: { kind: 'password_changed', email: `buyer${i}@example.org`, at: 0 },
            },
            Date.now(),
          );
      });
      const rows = await listMails(service.context.db, { limit: MAILS });
      const env = {
        ...process.env,
        TILL_DATABASE_URL: service.config.databaseUrl,
        TILL_DATA_DIR: service.config.dataDir,
        TILL_SECRET_KEY: service.config.secretKey.toString('hex'),
        TILL_SMTP_URL: smtp.url,
        TILL_MAIL_FROM: `Shop <payments@${FROM_DOMAIN}>`,
        TILL_NO_SANDBOX: 'true',
        // A killed worker's leases end after ten of these: the restarted one takes its mails over within 20 s.
        TILL_SMTP_TIMEOUT_MS: '2000',
        TILL_LOG_LEVEL: 'silent',
      };
      let child: ServingProcess | undefined;
      t.after(() => child?.child.kill('SIGKILL'));
      const kills: string[] = [];
      const kill = (how: string) => {
        if (!child || child.child.exitCode !== null || child.child.signalCode !== null) return;
        kills.push(how);
        child.child.kill('SIGKILL');
      };
      let arrivals = 0;
      smtp.verdict = () => {
        const arrival = ++arrivals;
        if (KILLS.includes(arrival) && arrival % 2 === 0) {
          kill(`reading mail ${arrival}`);
          return 'hang';
        }
        return 'accept';
      };
      smtp.onAccepted = (_mail, index) => {
        if (KILLS.includes(index + 1) && (index + 1) % 2 === 1) kill(`after taking mail ${index + 1}`);
      };
      const sent = async () => (await listMails(service.context.db, { status: 'SENT', limit: MAILS })).length;
      for (let run = 0; (await sent()) < MAILS; run++) {
        assert.ok(run <= KILLS.length + 1, `every mail sent within ${KILLS.length + 2} runs (${await sent()} sent)`);
        child = await serveTill(CLI, { ...env, PORT: String(await freePort()) });
        const exited = new Promise<'killed'>((resolve) => child!.child.once('exit', () => resolve('killed')));
        const outcome = await Promise.race([exited, waitFor(async () => (await sent()) === MAILS, 'every mail sent', 120_000).then(() => 'done' as const)]);
        if (outcome === 'done') await child.stop();
      }
      child = undefined;

      assert.equal(kills.length, KILLS.length, `killed at each point: ${kills.join('; ')}`);
      const copies = new Map<string, number>();
      for (const mail of smtp.received) copies.set(String(mail.parsed.messageId), (copies.get(String(mail.parsed.messageId)) ?? 0) + 1);
      const expected = rows.map((row) => `<${row.id}@${FROM_DOMAIN}>`).sort();
      assert.deepEqual([...copies.keys()].sort(), expected, 'every mail reached the server, each under its own Message-ID');
      for (const mail of smtp.received) {
        const row = rows.find((candidate) => `<${candidate.id}@${FROM_DOMAIN}>` === mail.parsed.messageId);
        assert.deepEqual(mail.envelopeTo, [row?.recipient], "each copy went to its cause's recipient only");
      }
      const resent = [...copies.values()].filter((count) => count > 1).length;
      // A copy again only where the server took a mail and the child died before recording it: at most the worker's 8 in flight per kill.
      assert.ok(resent <= 8 * KILLS.length, `${resent} mails sent again after a kill`);
      t.diagnostic(`kills: ${kills.join('; ')}; ${smtp.received.length} messages for ${MAILS} mails, ${resent} sent again under the same Message-ID`);
    });
  });
}
