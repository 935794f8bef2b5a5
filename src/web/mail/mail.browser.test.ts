// Mail as people see it, in Debian's Chromium: a user who forgot the password asks for a link, reads
// it in the mail the SMTP server received, and is signed in with a new password; the sandbox's mail
// page (axe-core) with every kind of mail kept, and each mail's HTML part at 360 and 1280 px under
// artifacts/mail/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPassword, createUser } from '../../accounts/users.ts';
import type { MailData, PaymentFacts, RefundFacts } from '../../mail/kinds.ts';
import { listMails, queueMail } from '../../mail/outbox.ts';
import { type MailWorker, startMailWorker } from '../../mail/worker.ts';
import { setAccentColor } from '../../merchants/brand.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { engines, startListeningTestService, type TestService } from '../../testing/harness.ts';
import { mailsTo, startSmtpServer, type TestSmtpServer } from '../../testing/smtp.ts';
import { waitFor } from '../../testing/wait.ts';
import { RESET_SENT } from '../sign-in/reset.route.ts';
import { renderMail } from './templates.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a brand new passphrase here';

function startWorker(service: TestService): MailWorker {
  const { context } = service;
  return startMailWorker(context, {
    render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
    pollIntervalMs: 20,
  });
}

for (const { engine, skip } of engines) {
  describe(`password reset by mail in Chromium on ${engine}`, { skip: skip || browserSkip }, () => {
    let smtp: TestSmtpServer;
    let service: TestService & { baseUrl: string };
    let browser: Browser;
    let worker: MailWorker;
    const email = 'forgetful@corner-coffee.example';

    before(async () => {
      smtp = await startSmtpServer();
      [service, browser] = await Promise.all([
        startListeningTestService(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'Till <till@corner-coffee.example>' }),
        launchChromium(),
      ]);
      const { merchantId } = await service.merchant();
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      worker = startWorker(service);
    });
    after(async () => {
      await worker?.stop();
      await browser?.close();
      await service?.stop();
      await smtp?.close();
    });

    test('the same answer for a stranger; the emailed link signs the user in with a new password, once', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      try {
        await page.goto(`${service.baseUrl}/sign-in`);
        await page.getByRole('link', { name: 'Forgot your password?' }).click();
        await typeInto(page, 'Email', 'nobody@corner-coffee.example');
        await page.getByRole('button', { name: 'Mail me a link' }).click();
        const stranger = await page.getByRole('status').textContent();
        assert.equal(stranger, RESET_SENT);

        await page.goto(`${service.baseUrl}/sign-in/forgot`);
        await typeInto(page, 'Email', email.toUpperCase());
        await page.getByRole('button', { name: 'Mail me a link' }).click();
        assert.equal(await page.getByRole('status').textContent(), stranger, 'a user and a stranger get the same answer');

        const [mail] = await waitFor(() => (mailsTo(smtp, email).length ? mailsTo(smtp, email) : undefined), 'the reset mail');
        assert.ok(mail);
        assert.deepEqual(mail.envelopeTo, [email]);
        assert.equal(mail.parsed.subject, 'Reset your Till password');
        const link = new RegExp(`Choose a new password: (${service.baseUrl}/sign-in/reset\\?token=[A-Za-z0-9_-]{43})`).exec(mail.parsed.text ?? '')?.[1];
        assert.ok(link, 'the text part carries the link');
        assert.ok(String(mail.parsed.html).includes(`href="${link}"`), 'the HTML part carries the same link');
        assert.equal(mailsTo(smtp, 'nobody@corner-coffee.example').length, 0);
        assert.equal((await service.context.db.selectFrom('password_resets').select('token_hash').execute()).length, 1, 'stored once, hashed');
        assert.ok(!(await service.context.db.selectFrom('password_resets').select('token_hash').execute())[0]!.token_hash.includes(link.split('token=')[1]!));

        await page.goto(link);
        await typeInto(page, 'New password', NEW_PASSWORD);
        await typeInto(page, 'New password again', NEW_PASSWORD);
        await page.getByRole('button', { name: 'Set the password and sign in' }).click();
        await page.waitForURL(`${service.baseUrl}/dashboard`);
        assert.ok(await checkPassword(service.context.db, email, NEW_PASSWORD));
        assert.equal(await checkPassword(service.context.db, email, PASSWORD), undefined);

        await page.goto(link);
        assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'This link cannot be used');
        const [changed] = await waitFor(() => {
          const found = mailsTo(smtp, email).filter((m) => m.parsed.subject === 'Your Till password was changed');
          return found.length ? found : undefined;
        }, 'the password-changed notice');
        assert.match(changed?.parsed.text ?? '', /was changed on/);
      } finally {
        await context.close();
      }
    });
  });
}

const payment: PaymentFacts = {
  merchantId: '',
  merchantName: 'Corner Coffee',
  sessionId: 'ps_example',
  publicOrderId: 'TX-0123456789ABCDEF0123456789ABCDEF',
  orderId: 'order-1042',
  concept: 'Two flat whites and a very long pastry name that has to wrap on a phone screen',
  amount: '12.50 USD',
  currency: 'USD',
  tokenAmount: '12.5',
  payer: '0x8ba1f109551bD432803012645Ac136ddd64DBA72',
  txUrl: 'http://127.0.0.1/sandbox/tx/0xabc',
  at: Date.UTC(2026, 4, 12, 9, 30),
};

describe('the sandbox mail page and every mail in Chromium', { skip: browserSkip }, () => {
  let service: TestService & { baseUrl: string };
  let browser: Browser;
  let worker: MailWorker;

  before(async () => {
    [service, browser] = await Promise.all([startListeningTestService('sqlite'), launchChromium()]);
    const { merchantId } = await service.merchant({ name: 'Corner Coffee' });
    await setAccentColor(service.context.db, merchantId, '#0f766e');
    const user = await createUser(service.context.db, { merchantId, email: 'owner@corner-coffee.example', password: PASSWORD });
    const facts = { ...payment, merchantId };
    const refund: RefundFacts = { ...facts, refundId: 'rf_1', refundAmount: '5.00 USD', refundTokenAmount: '5', reason: 'One coffee was cold', failure: null };
    const at = Date.UTC(2026, 4, 12, 10, 0);
    const mails: MailData[] = [
      { kind: 'receipt', payment: facts },
      { kind: 'refund_receipt', refund },
      { kind: 'payment_received', payment: facts },
      { kind: 'refund_succeeded', refund },
      { kind: 'refund_failed', refund: { ...refund, failure: 'the authorization expired before it was used' } },
      { kind: 'payment_attention', payment: facts, status: 'PENDING', detail: 'The payment has been PENDING for more than 15 minutes.' },
      {
        kind: 'webhook_failing',
        merchantName: 'Corner Coffee',
        url: 'https://shop.corner-coffee.example/hooks/till',
        failingSince: at - 86_400_000,
        failed: 12,
      },
      {
        kind: 'summary',
        merchantName: 'Corner Coffee',
        period: 'daily',
        from: at - 86_400_000,
        to: at,
        payments: 3,
        totals: [{ currency: 'USD', amount: '37.50 USD' }],
        refunds: 1,
      },
      { kind: 'password_reset', email: user.email, link: `${service.baseUrl}/sign-in/reset?token=${'x'.repeat(43)}`, expiresAt: at + 1_800_000 },
      { kind: 'password_changed', email: user.email, at },
      { kind: 'wallet_changed', merchantName: 'Corner Coffee', wallet: '0x8ba1f109551bD432803012645Ac136ddd64DBA72', previous: null, at },
    ];
    for (const [index, data] of mails.entries())
      await queueMail(
        service.context.db,
        { mode: 'sandbox', merchantId, userId: user.id, cause: `example:${index}`, recipient: index < 2 ? 'buyer@example.org' : user.email, data },
        at + index,
      );
    worker = startWorker(service);
    await waitFor(async () => (await listMails(service.context.db, { status: 'KEPT', limit: 100 })).length === mails.length, 'every mail kept');
  });
  after(async () => {
    await worker?.stop();
    await browser?.close();
    await service?.stop();
  });

  test('the kept mails are listed, each readable, axe-clean; each HTML part looked at on a phone and a desktop', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    try {
      await page.goto(`${service.baseUrl}/sandbox/mail`);
      await assertAccessible(page);
      await screenshots(page, 'mail', 'sandbox-mail-page');
      const links = page.getByRole('table').getByRole('link');
      assert.equal(await links.count(), 11);
      await page.getByRole('link', { name: /^Test payment — no real money: Your receipt from Corner Coffee/ }).click();
      assert.match((await page.locator('pre').textContent()) ?? '', /TEST PAYMENT — NO REAL MONEY/);
      await assertAccessible(page);
      await screenshots(page, 'mail', 'sandbox-mail-receipt');
      for (const mail of await listMails(service.context.db, { status: 'KEPT', limit: 100 })) {
        await page.goto(`${service.baseUrl}/sandbox/mail/${mail.id}/html`);
        assert.ok(await page.getByRole('heading', { level: 1 }).isVisible());
        await screenshots(page, 'mail', `mail-${mail.data.kind}`, [
          [360, 740],
          [1280, 900],
        ]);
      }
    } finally {
      await context.close();
    }
  });
});
