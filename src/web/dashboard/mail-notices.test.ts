// The Notifications page's mail: each user chooses the notices they receive (a form with the CSRF
// token; a refused field saves nothing), and sees the merchant's mails the SMTP server refused, with
// the recipient and the server's answer, as `till mail list` shows operators; not another merchant's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../accounts/users.ts';
import { queueWalletChanged } from '../../mail/notices.ts';
import { DEFAULT_PREFERENCES, findPreferences, noticeRecipients, summaryRecipients } from '../../mail/preferences.ts';
import { createMailTransport } from '../../mail/transport.ts';
import { type MailWorker, startMailWorker } from '../../mail/worker.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';
import { startSmtpServer, type TestSmtpServer } from '../../testing/smtp.ts';
import { waitFor } from '../../testing/wait.ts';
import { renderMail } from '../mail/templates.ts';

const PATH = '/dashboard/notifications';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's email notices on ${engine}`, skip, () => {
    let smtp: TestSmtpServer;
    let service: TestService;
    const workers: MailWorker[] = [];

    before(async () => {
      smtp = await startSmtpServer();
      service = await startTestService(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'payments@shop.example' });
    });
    after(async () => {
      for (const worker of workers) await worker.stop();
      await service?.stop();
      await smtp?.close();
    });

    /** A mail worker that gives up after `retries` refusals, each retried an hour later. */
    function startWorker(retries: number) {
      const { context } = service;
      const worker = startMailWorker(context, {
        render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
        transport: createMailTransport(context.config.mail, 1_000),
        pollIntervalMs: 20,
        retrySchedule: Array(retries).fill(3_600_000),
      });
      workers.push(worker);
      return worker;
    }

    test('each user saves their own notices and summary; a refused field or a post without the CSRF token saves nothing', async () => {
      const owner = await signedInMerchant(service);
      const colleague = await createUser(service.context.db, {
        merchantId: owner.merchantId,
        email: `colleague-${engine}@shop.example`,
        password: owner.password,
      });
      const page = await owner.browser.request('GET', PATH);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2 id="email-notices">Email notices<\/h2>/);
      for (const topic of ['payments', 'refunds', 'attention', 'webhooks'])
        assert.match(page.body, new RegExp(`id="mail-${topic}" name="notices" value="${topic}" checked`), `${topic} is on by default`);
      assert.match(page.body, /id="mail-summary-off" name="summary" value="off" checked/);

      const csrf = await owner.browser.csrf(PATH);
      const saved = await owner.browser.request('POST', `${PATH}/mail`, [
        ['csrf', csrf],
        ['notices', 'refunds'],
        ['notices', 'webhooks'],
        ['summary', 'weekly'],
      ]);
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, `${PATH}?mail=1#email-notices`);
      const after = await owner.browser.request('GET', `${PATH}?mail=1`);
      assert.match(after.body, /Email notices saved\./);
      assert.match(after.body, /id="mail-payments" name="notices" value="payments">/);
      assert.match(after.body, /id="mail-refunds" name="notices" value="refunds" checked/);
      assert.match(after.body, /id="mail-summary-weekly" name="summary" value="weekly" checked/);
      assert.deepEqual(await findPreferences(service.context.db, owner.userId), {
        payments: false,
        refunds: true,
        attention: false,
        webhooks: true,
        summary: 'weekly',
      });
      // The colleague's choice is theirs: still every notice, and no summary.
      assert.deepEqual(await findPreferences(service.context.db, colleague.id), DEFAULT_PREFERENCES);
      assert.deepEqual(
        (await noticeRecipients(service.context.db, owner.merchantId, 'payments')).map((user) => user.userId),
        [colleague.id],
      );
      assert.ok((await summaryRecipients(service.context.db, 'weekly')).some((user) => user.userId === owner.userId));

      for (const [field, form] of [
        ['summary', { summary: 'hourly', notices: 'payments' }],
        ['notices', { summary: 'off', notices: 'everything' }],
      ] as const) {
        const refused = await owner.browser.request('POST', `${PATH}/mail`, { csrf, ...form });
        assert.equal(refused.statusCode, 400, field);
        assert.match(refused.body, /Nothing was saved\./);
        assert.match(refused.body, new RegExp(`name="${field === 'summary' ? 'summary' : 'notices'}" value="[a-z]+"( checked)? aria-invalid="true"`));
      }
      const forged = await owner.browser.request('POST', `${PATH}/mail`, { summary: 'off' });
      assert.equal(forged.statusCode, 403);
      assert.equal((await findPreferences(service.context.db, owner.userId)).summary, 'weekly');
    });

    test('mails the SMTP server refused show with the recipient and its answer, failed or retrying; another merchant sees none of them', async () => {
      const owner = await signedInMerchant(service);
      const before = await owner.browser.request('GET', PATH);
      assert.match(before.body, /None: no mail of this account has failed\./);
      smtp.verdict = () => ({ refuse: 550, message: 'Mailbox unavailable' });
      const [user] = await service.context.db.selectFrom('users').select('email').where('merchant_id', '=', owner.merchantId).execute();

      // A wallet change tells every user; the server refuses and the worker gives up at once.
      const giveUp = startWorker(0);
      const wallet = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
      await service.context.db.transaction().execute((trx) => queueWalletChanged(trx, owner.merchantId, { wallet, previous: null }, 'sandbox', 1_000));
      const failedRow = () =>
        service.context.db.selectFrom('mail_outbox').select(['status', 'last_error']).where('merchant_id', '=', owner.merchantId).execute();
      await waitFor(async () => (await failedRow()).every((row) => row.status === 'FAILED'), 'the mail failed');
      await giveUp.stop();
      // A second change, with a worker that tries again in an hour.
      startWorker(3);
      await service.context.db.transaction().execute((trx) => queueWalletChanged(trx, owner.merchantId, { wallet: null, previous: wallet }, 'sandbox', 2_000));
      await waitFor(async () => (await failedRow()).some((row) => row.status === 'PENDING' && row.last_error !== null), 'the mail refused once');

      const page = await owner.browser.request('GET', PATH);
      const section = page.body.slice(page.body.indexOf('id="undelivered-mail"'));
      assert.equal([...section.matchAll(/<tr><td data-label="Queued">/g)].length, 2);
      assert.match(section, new RegExp(`<td data-label="To">${user!.email}</td>`));
      assert.match(section, /<td data-label="Mail">Payout wallet changed<\/td>/);
      assert.match(section, /<strong>Failed<\/strong>, not tried again \(1 attempt\)/);
      assert.match(section, /Retrying, next attempt <time[^>]*>[^<]+<\/time> \(1 attempt\)/);
      assert.match(section, /550 Mailbox unavailable/);

      const other = await signedInMerchant(service);
      const theirs = await other.browser.request('GET', PATH);
      assert.ok(!theirs.body.includes(user!.email));
      assert.match(theirs.body, /None: no mail of this account has failed\./);
      smtp.verdict = () => 'accept';
    });

    test('signed out, the notices form sends the browser to sign in and saves nothing', async () => {
      const answer = await new Browser(service).request('POST', `${PATH}/mail`, { summary: 'daily' });
      assert.notEqual(answer.statusCode, 200);
      assert.deepEqual(await summaryRecipients(service.context.db, 'daily'), []);
    });
  });
}
