// The mail worker's once-a-minute looks, driven with the time they are given, and what the SMTP
// server received: a payment PENDING past its bound, a webhook endpoint failing for a day, the daily
// and weekly summaries; each told once. And `till merchant set-wallet` telling every user.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createUser } from '../accounts/users.ts';
import { runNodeScript } from '../testing/child-process.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../testing/harness.ts';
import { mailsTo, startSmtpServer, type TestSmtpServer } from '../testing/smtp.ts';
import { waitFor } from '../testing/wait.ts';
import { renderMail } from '../web/mail/templates.ts';
import { sendTestEvent } from '../webhooks/deliveries.ts';
import { setWebhook } from '../webhooks/endpoints.ts';
import { startWebhookWorker } from '../webhooks/worker.ts';
import { listMails } from './outbox.ts';
import { lastPeriod, mailPasses, PENDING_BOUND_MS, WEBHOOK_FAILING_MS } from './passes.ts';
import { savePreferences } from './preferences.ts';
import { createMailTransport } from './transport.ts';
import { type MailWorker, startMailWorker } from './worker.ts';

const DAY_MS = 86_400_000;

for (const { engine, skip } of engines) {
  describeOnEngine(`the mail passes on ${engine}`, skip, () => {
    let smtp: TestSmtpServer;
    let shop: PayingShop;
    let worker: MailWorker;
    const owner = `owner-${engine}@tea.example`;
    const daily = `daily-${engine}@tea.example`;
    const weekly = `weekly-${engine}@tea.example`;
    const everyone = [owner, daily, weekly];
    const failing = createServer((_request, response) => response.writeHead(500).end('down for maintenance'));
    /** The time the passes and the mail worker see: mails a pass queues are due at the time it ran. */
    let clock = Date.now();
    const run = (name: string, now: number) => {
      const pass = mailPasses(shop.service.context).find((candidate) => candidate.name === name);
      assert.ok(pass, name);
      clock = Math.max(clock, now);
      return pass.run(now);
    };
    const queued = async (kind: string) => (await listMails(shop.service.context.db, { limit: 500 })).filter((mail) => mail.data.kind === kind);
    const arrived = (to: string, subject: RegExp) =>
      waitFor(() => mailsTo(smtp, to).find((mail) => subject.test(mail.parsed.subject ?? '')), `${subject} to ${to}`);

    before(async () => {
      smtp = await startSmtpServer();
      shop = await startPayingShop(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'payments@tea.example' }, { name: 'Tea & Co', faultControls: true });
      const { db } = shop.service.context;
      for (const email of everyone) await createUser(db, { merchantId: shop.merchantId, email, password: 'correct horse battery staple' });
      const ids = Object.fromEntries((await db.selectFrom('users').select(['id', 'email']).execute()).map((user) => [user.email, user.id]));
      const quiet = { payments: false, refunds: false, attention: false, webhooks: false };
      await savePreferences(db, ids[daily]!, { ...quiet, summary: 'daily' }, Date.now());
      await savePreferences(db, ids[weekly]!, { ...quiet, summary: 'weekly' }, Date.now());
      const context = shop.service.context;
      worker = startMailWorker(
        { ...context, now: () => clock },
        {
          render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
          transport: createMailTransport(context.config.mail, 1_000),
          pollIntervalMs: 20,
        },
      );
      await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      await worker?.stop();
      await shop?.stop();
      await smtp?.close();
      failing.close();
    });

    test('a payment PENDING past its bound is told to the users who want attention notices, once', async () => {
      const sessionId = await shop.createSession({ amount: 0.3, currency: 'USD', orderId: `stuck-${engine}` });
      const payer = await shop.fundedPayer();
      // The facilitator settles but its answer is lost: the payment stays PENDING (no reconciler runs here).
      await shop.sandbox.faults.set({ dropNextSettleResponse: true });
      await shop.pay(sessionId, (await shop.signedPayment(payer, await shop.challenge(sessionId))).header);
      const payment = await shop.service.context.db
        .selectFrom('payments')
        .select(['id', 'status', 'created_at'])
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow();
      assert.equal(payment.status, 'PENDING');
      const createdAt = Number(payment.created_at);

      await run('long-pending payments', createdAt + PENDING_BOUND_MS - 60_000);
      assert.deepEqual(await queued('payment_attention'), [], 'not yet past the bound');
      await run('long-pending payments', createdAt + PENDING_BOUND_MS + 60_000);
      await run('long-pending payments', createdAt + PENDING_BOUND_MS + 120_000);
      const mail = await arrived(owner, /needs your attention/);
      assert.equal(mail.parsed.subject, 'Test payment — no real money: A payment needs your attention: 0.30 USD is PENDING');
      assert.match(mail.parsed.text ?? '', /PENDING for more than 15 minutes/);
      assert.match(mail.parsed.text ?? '', new RegExp(`stuck-${engine}`));
      assert.deepEqual(
        (await queued('payment_attention')).map((row) => row.recipient),
        [owner],
        'once, and only to the user who wants attention notices',
      );
    });

    test('a webhook endpoint failing for 24 hours is told once per failing streak', async () => {
      const { db } = shop.service.context;
      const url = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/hooks`;
      await setWebhook(db, shop.service.config.secretKey, shop.merchantId, { url, events: ['payment.succeeded'] }, 'sandbox', Date.now());
      const { deliveryId } = await sendTestEvent(db, 'sandbox', shop.merchantId);
      const webhooks = startWebhookWorker(shop.service.context, { pollIntervalMs: 20 });
      try {
        await waitFor(async () => {
          const row = await db.selectFrom('webhook_deliveries').select('attempts').where('id', '=', deliveryId).executeTakeFirstOrThrow();
          return Number(row.attempts) > 0;
        }, 'the delivery refused once');
      } finally {
        await webhooks.stop();
      }
      const since = Number((await db.selectFrom('webhook_deliveries').select('created_at').where('id', '=', deliveryId).executeTakeFirstOrThrow()).created_at);

      await run('failing webhooks', since + WEBHOOK_FAILING_MS - 60_000);
      assert.deepEqual(await queued('webhook_failing'), [], 'not failing for a day yet');
      await run('failing webhooks', since + WEBHOOK_FAILING_MS + 60_000);
      await run('failing webhooks', since + WEBHOOK_FAILING_MS + 120_000);
      const mail = await arrived(owner, /failing for 24 hours/);
      assert.ok(mail.parsed.text?.includes(url), 'the mail names the endpoint');
      assert.deepEqual(
        (await queued('webhook_failing')).map((row) => row.recipient),
        [owner],
      );
    });

    test('the daily and weekly summaries go to the users who asked, once each, with the payments of their period', async () => {
      const { sessionId, payer, offer } = await shop.readyToPay({ amount: 0.5, currency: 'USD' });
      const paid = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
      assert.equal(paid.status, 200, await paid.clone().text());
      const settledAt = Number(
        (await shop.service.context.db.selectFrom('payments').select('settled_at').where('session_id', '=', sessionId).executeTakeFirstOrThrow()).settled_at,
      );
      // The first minute of the next UTC day, and of the Monday after the payment's week.
      const nextDay = Math.floor(settledAt / DAY_MS) * DAY_MS + DAY_MS + 60_000;
      let nextMonday = nextDay;
      while (lastPeriod('weekly', nextMonday).to <= settledAt) nextMonday += DAY_MS;

      await run('summaries', nextDay);
      await run('summaries', nextDay + 60_000);
      const day = await arrived(daily, /daily summary/);
      assert.equal(day.parsed.subject, 'Test payment — no real money: Your daily summary: 1 payment');
      assert.match(day.parsed.text ?? '', /0\.50 USD/);
      await run('summaries', nextMonday);
      // A weekly summary is of the last whole week: the first pass told the week before the payment's (none).
      const week = await arrived(weekly, /weekly summary: 1 payment$/);
      assert.match(week.parsed.text ?? '', /0\.50 USD/);
      const summaries = await queued('summary');
      assert.deepEqual(summaries.filter((row) => row.recipient === daily).length, nextMonday === nextDay ? 1 : 2, 'one daily summary a day');
      const weeks = new Set([nextDay, nextMonday].map((at) => lastPeriod('weekly', at).from));
      assert.equal(summaries.filter((row) => row.recipient === weekly).length, weeks.size, 'one weekly summary a week');
      assert.equal(summaries.filter((row) => row.recipient === owner).length, 0, 'no summary for a user who did not ask');
    });

    test('till merchant set-wallet mails every user of the merchant the old and the new wallet', async () => {
      const cli = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
      const env = {
        ...process.env,
        TILL_DATABASE_URL: shop.service.config.databaseUrl,
        TILL_DATA_DIR: shop.service.config.dataDir,
        TILL_SECRET_KEY: shop.service.config.secretKey.toString('hex'),
        TILL_LOG_LEVEL: 'silent',
      };
      const wallet = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
      const set = await runNodeScript(cli, ['merchant', 'set-wallet', shop.merchantId, wallet, '--mode', 'test', '--json'], { env });
      assert.equal(set.code, 0, set.stderr);
      for (const email of everyone) {
        const mail = await arrived(email, /payout wallet was changed$/);
        assert.match(mail.parsed.text ?? '', new RegExp(`New wallet: +${wallet}`));
        assert.match(mail.parsed.text ?? '', new RegExp(`Previous wallet: +${shop.merchantWallet}`, 'i'));
      }
    });
  });
}
