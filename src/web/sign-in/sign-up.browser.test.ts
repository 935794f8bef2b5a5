// Self-serve sign-up in Debian's Chromium, with sign-up turned on: a newcomer finds "Open an
// account" on the sign-in page, fills in the form, reads the link in the mail the SMTP server
// received, opens it, and lands signed in on the dashboard of the new merchant, in test mode.
// axe-core on the form; phone and desktop screenshots under artifacts/sign-in/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { MailWorker } from '../../mail/worker.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { engines, startListeningTestService, type TestService } from '../../testing/harness.ts';
import { mailsTo, startSmtpMailWorker, startSmtpServer, type TestSmtpServer } from '../../testing/smtp.ts';
import { waitFor } from '../../testing/wait.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describe(`self-serve sign-up in Chromium on ${engine}`, { skip: skip || browserSkip }, () => {
    let smtp: TestSmtpServer;
    let service: TestService & { baseUrl: string };
    let browser: Browser;
    let worker: MailWorker;

    before(async () => {
      smtp = await startSmtpServer();
      [service, browser] = await Promise.all([
        startListeningTestService(engine, { TILL_SIGN_UP: 'true', TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'Till <till@till.example>' }),
        launchChromium(),
      ]);
      worker = startSmtpMailWorker(service.context);
    });
    after(async () => {
      await worker?.stop();
      await browser?.close();
      await service?.stop();
      await smtp?.close();
    });

    test('sign up, open the mailed link, land on the new merchant’s dashboard as its owner', async () => {
      const email = `newcomer-${engine}-${Date.now()}@beans.example`;
      const page = await browser.newPage();
      await page.goto(`${service.baseUrl}/sign-in`);
      await page.getByRole('link', { name: 'Open an account' }).click();
      await page.waitForURL(/\/sign-up$/);
      await assertAccessible(page);
      await screenshots(page, 'sign-in', 'sign-up');
      await typeInto(page, 'Business name', 'Fresh Beans');
      await typeInto(page, 'Email', email);
      await typeInto(page, 'Password', PASSWORD);
      await typeInto(page, 'Password again', PASSWORD);
      await page.getByRole('button', { name: 'Mail me the link' }).click();
      await page.getByText('Check your inbox').waitFor();

      await waitFor(async () => mailsTo(smtp, email).length === 1, 'the sign-up mail arrives');
      const [mail] = mailsTo(smtp, email);
      assert.equal(mail!.parsed.subject, 'Confirm your Till account');
      const link = /http:\/\/[^\s"<>]+\/sign-up\/confirm\?token=[A-Za-z0-9_-]{43}/.exec(mail!.parsed.text ?? '')?.[0];
      assert.ok(link, 'the mail carries the link');

      await page.goto(link!);
      await page.getByRole('heading', { name: 'Open the account of Fresh Beans' }).waitFor();
      await page.getByRole('button', { name: 'Open the account' }).click();
      await page.waitForURL(/\/dashboard$/);
      assert.match(await page.content(), /Test mode/);
      await page.goto(`${service.baseUrl}/dashboard/team`);
      assert.match(await page.content(), new RegExp(email.replace(/[.]/g, '\\.')));
      await page.close();
    });
  });
}
