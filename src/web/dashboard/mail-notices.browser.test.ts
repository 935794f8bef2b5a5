// The Notifications page's mail in Debian's Chromium: a merchant user reads the mails the SMTP
// server refused (to whom, the server's answer, failed or retrying), turns a notice off and asks for
// a weekly summary by clicks, and sees the choice kept. axe-core on the page; phone and desktop
// screenshots under artifacts/dashboard/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { queueWalletChanged } from '../../mail/notices.ts';
import { findPreferences } from '../../mail/preferences.ts';
import { type MailWorker, startMailWorker } from '../../mail/worker.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { engines, startListeningTestService, type TestService } from '../../testing/harness.ts';
import { startSmtpServer, type TestSmtpServer } from '../../testing/smtp.ts';
import { waitFor } from '../../testing/wait.ts';
import { renderMail } from '../mail/templates.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describe(`the Notifications page's email in Chromium on ${engine}`, { skip: skip || browserSkip }, () => {
    let smtp: TestSmtpServer;
    let service: TestService & { baseUrl: string };
    let browser: Browser;
    let merchantId: string;
    let userId: string;
    const workers: MailWorker[] = [];

    const startWorker = (retries: number) => {
      const { context } = service;
      const worker = startMailWorker(context, {
        render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
        pollIntervalMs: 20,
        retrySchedule: Array(retries).fill(3_600_000),
      });
      workers.push(worker);
      return worker;
    };
    const outbox = () => service.context.db.selectFrom('mail_outbox').select(['status', 'last_error']).where('merchant_id', '=', merchantId).execute();

    before(async () => {
      smtp = await startSmtpServer();
      smtp.verdict = () => ({ refuse: 550, message: '5.1.1 Mailbox unavailable: no such user here' });
      [service, browser] = await Promise.all([
        startListeningTestService(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'Till <till@corner-coffee.example>' }),
        launchChromium(),
      ]);
      ({ merchantId } = await service.merchant({ name: 'Corner Coffee' }));
      userId = (await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD })).id;
      await createUser(service.context.db, { merchantId, email: 'barista@corner-coffee.example', password: PASSWORD });
      // Two payout wallet changes whose mails the server refuses: the first given up on, the second to be retried.
      const wallet = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
      const giveUp = startWorker(0);
      await service.context.db
        .transaction()
        .execute((trx) => queueWalletChanged(trx, merchantId, { wallet, previous: null }, 'sandbox', Date.now() - 3_600_000));
      await waitFor(async () => (await outbox()).filter((row) => row.status === 'FAILED').length === 2, 'the first mails failed');
      await giveUp.stop();
      startWorker(3);
      await service.context.db.transaction().execute((trx) => queueWalletChanged(trx, merchantId, { wallet: null, previous: wallet }, 'sandbox', Date.now()));
      await waitFor(async () => (await outbox()).filter((row) => row.status === 'PENDING' && row.last_error).length === 2, 'the second mails refused once');
    });
    after(async () => {
      for (const worker of workers) await worker.stop();
      await browser?.close();
      await service?.stop();
      await smtp?.close();
    });

    test('the refused mails with their recipients and answers; a notice turned off and a weekly summary chosen by clicks', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        await page.goto(`${service.baseUrl}/dashboard/notifications`);
        await typeInto(page, 'Email', EMAIL);
        await typeInto(page, 'Password', PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${service.baseUrl}/dashboard/notifications`);

        const undelivered = page.locator('table.undelivered');
        assert.equal(await undelivered.locator('tbody tr').count(), 4, 'two mails to each of the two users');
        const text = (await undelivered.textContent()) ?? '';
        assert.match(text, /barista@corner-coffee\.example/);
        assert.match(text, /550 5\.1\.1 Mailbox unavailable: no such user here/);
        assert.match(text, /Failed, not tried again/);
        assert.match(text, /Retrying, next attempt/);

        const notices = page.getByRole('group', { name: 'Mail me when' });
        assert.equal(await notices.getByRole('checkbox', { checked: true }).count(), 4, 'every notice is on at first');
        await notices.getByLabel('A payment is received').uncheck();
        await page.getByRole('group', { name: 'Summary of payments and refunds' }).getByLabel('Weekly, on Mondays, of the week before').check();
        await page.getByRole('button', { name: 'Save email notices' }).click();
        await page.waitForURL(`${service.baseUrl}/dashboard/notifications?mail=1#email-notices`);
        await page.getByText('Email notices saved.').waitFor();
        assert.equal(await page.getByLabel('A payment is received').isChecked(), false);
        assert.equal(await page.getByLabel('Weekly, on Mondays, of the week before').isChecked(), true);
        assert.deepEqual(await findPreferences(service.context.db, userId), {
          payments: false,
          refunds: true,
          attention: true,
          webhooks: true,
          summary: 'weekly',
        });

        await assertAccessible(page);
        if (engine === 'sqlite') await screenshots(page, 'dashboard', 'notifications-mail');
      } finally {
        await context.close();
      }
    });
  });
}
