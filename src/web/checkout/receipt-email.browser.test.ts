// The hosted page's optional receipt address, in Debian's Chromium on the sandbox chain: the buyer
// types an address before paying, pays with the sandbox wallet, and a real SMTP server receives the
// receipt at that address, once; an address that is not one is refused beside the field.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { listMails } from '../../mail/outbox.ts';
import type { MailWorker } from '../../mail/worker.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots } from '../../testing/browser.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { mailsTo, startSmtpMailWorker, startSmtpServer, type TestSmtpServer } from '../../testing/smtp.ts';
import { forwardingPort } from '../../testing/tcp-proxy.ts';
import { waitFor } from '../../testing/wait.ts';
import { openCheckout, outcome } from './fixtures/checkout-page.ts';

const EMAIL_LABEL = 'Email for your receipt (optional)';

for (const { engine, skip } of engines) {
  describeOnEngine(`the receipt address typed on the hosted page, on ${engine}`, skip || browserSkip, () => {
    let smtp: TestSmtpServer;
    let shop: PayingShop;
    let worker: MailWorker;
    let browser: Browser;
    let forward: Awaited<ReturnType<typeof forwardingPort>>;
    /** The service's own base URL, which the page is opened at: its script's request must come from it. */
    let baseUrl: string;

    before(async () => {
      [smtp, forward] = await Promise.all([startSmtpServer(), forwardingPort()]);
      baseUrl = `http://127.0.0.1:${forward.port}`;
      [shop, browser] = await Promise.all([
        startPayingShop(engine, { TILL_BASE_URL: baseUrl, TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'payments@shop.example' }, { name: 'Paper & Ink' }),
        launchChromium(),
      ]);
      forward.forwardTo(Number(new URL(shop.baseUrl).port));
      worker = startSmtpMailWorker(shop.service.context);
    });
    after(async () => {
      await worker?.stop();
      await browser?.close();
      await shop?.stop();
      await smtp?.close();
      forward?.server.close();
    });

    /** Every receipt mail of the session in the outbox, once all of them have gone out. */
    const sentReceiptsOf = async (sessionId: string) => {
      const db = shop.service.context.db;
      await waitFor(async () => (await listMails(db, { status: 'PENDING', limit: 1 })).length === 0, 'every queued mail sent');
      return (await listMails(db, { limit: 500 })).filter((mail) => mail.data.kind === 'receipt' && mail.data.payment.sessionId === sessionId);
    };

    test('a buyer types an address that is not one and is told beside the field; corrected, they pay and the SMTP server receives the receipt there, once', async () => {
      const sessionId = await shop.createSession({ amount: 0.4, currency: 'USD', concept: 'A notebook', orderId: `INK-${engine}` });
      const { page, context, proofs } = await openCheckout(browser, baseUrl, sessionId);
      try {
        const field = page.getByLabel(EMAIL_LABEL, { exact: true });
        const help = page.locator('#receipt-email-help');
        const pay = page.getByRole('button', { name: /Pay with Sandbox wallet/ });
        await pay.waitFor();
        assert.equal(await field.getAttribute('type'), 'email');
        await assertAccessible(page);

        await field.fill('buyer at example.org');
        await pay.click();
        await page.locator('#receipt-email[aria-invalid="true"]').waitFor();
        assert.equal(await help.textContent(), 'This is not an email address (write it as name@example.com).');
        assert.ok(await field.evaluate((input) => input === document.activeElement), 'the field the buyer has to fix has the focus');
        assert.equal(proofs.length, 0, 'nothing was paid');
        assert.equal(await outcome(page).isHidden(), true);
        await assertAccessible(page);
        await screenshots(page, 'checkout', 'receipt-email-invalid');

        // Fixed as it is typed: the message goes at once.
        await field.fill(' Ada.Buyer@Example.org ');
        await page.locator('#receipt-email[aria-invalid="false"]').waitFor();
        assert.equal(await help.textContent(), 'We email you the receipt once you have paid. Leave it empty for none.');
        await screenshots(page, 'checkout', 'receipt-email-payable');

        await pay.click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 60_000 });
        await page.locator('#receipt-mail').getByText('Receipt sent to ada.buyer@example.org.').waitFor();
        assert.equal(await page.locator('#receipt-email-field').isHidden(), true, 'nothing left to type');
        assert.equal(await page.getByRole('link', { name: 'Email me the receipt' }).count(), 0, 'the receipt is on its way already');
        await assertAccessible(page);
        await screenshots(page, 'checkout', 'receipt-email-sent');

        const [mail] = await waitFor(() => (mailsTo(smtp, 'ada.buyer@example.org').length ? mailsTo(smtp, 'ada.buyer@example.org') : undefined), 'the receipt');
        assert.equal(mail?.parsed.subject, 'Test payment — no real money: Your receipt from Paper & Ink: 0.40 USD');
        assert.match(mail?.parsed.text ?? '', /A notebook/);
        assert.deepEqual(
          (await sentReceiptsOf(sessionId)).map((row) => row.recipient),
          ['ada.buyer@example.org'],
        );
        assert.equal(mailsTo(smtp, 'ada.buyer@example.org').length, 1, 'one receipt');
      } finally {
        await context.close();
      }
    });

    test('the address the merchant gave at creation, typed again by the buyer, gets one receipt; an empty field sends none and offers the form', async () => {
      const given = await shop.createSession({ amount: 0.3, currency: 'USD', concept: 'Ink', buyerEmail: 'grace@example.org' });
      const typedAgain = await openCheckout(browser, baseUrl, given);
      try {
        await typedAgain.page.getByLabel(EMAIL_LABEL, { exact: true }).fill('grace@example.org');
        await typedAgain.page.getByRole('button', { name: /Pay with Sandbox wallet/ }).click();
        await typedAgain.page.locator('#receipt-mail').getByText('Receipt sent to grace@example.org.').waitFor({ timeout: 60_000 });
      } finally {
        await typedAgain.context.close();
      }
      assert.deepEqual(
        (await sentReceiptsOf(given)).map((row) => row.recipient),
        ['grace@example.org'],
      );
      assert.equal(mailsTo(smtp, 'grace@example.org').length, 1);

      const none = await shop.createSession({ amount: 0.3, currency: 'USD', concept: 'Nib' });
      const empty = await openCheckout(browser, baseUrl, none);
      try {
        await empty.page.getByRole('button', { name: /Pay with Sandbox wallet/ }).click();
        await outcome(empty.page).getByText('Paid. Thank you!').waitFor({ timeout: 60_000 });
        await empty.page.getByRole('link', { name: 'Email me the receipt' }).waitFor();
        assert.equal(await empty.page.locator('#receipt-mail').count(), 0);
      } finally {
        await empty.context.close();
      }
      assert.deepEqual(await sentReceiptsOf(none), []);
    });

    test('the JSON request is refused from another site, and names the field it refuses', async () => {
      const { app } = shop.service;
      const post = (payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
        app.inject({ method: 'POST', url: '/mail/receipt.json', headers: { 'content-type': 'application/json', ...headers }, payload });
      const crossSite = await post(
        { order: `TX-${'A'.repeat(32)}`, email: 'x@example.org' },
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      );
      assert.equal(crossSite.statusCode, 400);
      assert.equal(crossSite.json().error.code, 'invalid_request');
      const sameSiteElsewhere = await post({ order: `TX-${'A'.repeat(32)}`, email: 'x@example.org' }, { 'sec-fetch-site': 'same-site' });
      assert.equal(sameSiteElsewhere.statusCode, 400);
      const asForm = await app.inject({
        method: 'POST',
        url: '/mail/receipt.json',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `order=TX-${'A'.repeat(32)}&email=x%40example.org`,
      });
      assert.equal(asForm.statusCode, 415);
      const badEmail = await post({ order: `TX-${'A'.repeat(32)}`, email: 'x@example.org\r\nBcc: thief@evil.example' });
      assert.deepEqual([badEmail.statusCode, badEmail.json().error.field], [400, 'email']);
      const badOrder = await post({ order: 'sess_123', email: 'x@example.org' });
      assert.deepEqual([badOrder.statusCode, badOrder.json().error.field], [400, 'order']);
      const unknown = await post({ order: `TX-${'A'.repeat(32)}`, email: 'x@example.org' });
      assert.deepEqual([unknown.statusCode, unknown.json().error.code], [404, 'not_found']);
      const crossSiteForm = await app.inject({
        method: 'POST',
        url: '/mail/receipt',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        payload: `order=TX-${'A'.repeat(32)}&email=x%40example.org`,
      });
      assert.equal(crossSiteForm.statusCode, 403);
    });
  });
}
