import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createUser } from '../accounts/users.ts';
import { runNodeScript } from '../testing/child-process.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../testing/harness.ts';
import { Browser, signedInMerchant } from '../testing/page-browser.ts';
import { mailsTo, type ReceivedMail, startSmtpServer, type TestSmtpServer } from '../testing/smtp.ts';
import { waitFor } from '../testing/wait.ts';
import { renderMail } from '../web/mail/templates.ts';
import { listMails } from './outbox.ts';
import { findPreferences } from './preferences.ts';
import { createMailTransport } from './transport.ts';
import { type MailWorker, startMailWorker } from './worker.ts';

const FROM = 'Shop payments <payments@shop.example>';
// Names, order ids and concepts are the merchant's words: a line break in them must not make a header.
const INJECTED_ORDER = 'order-7\r\nBcc: thief@evil.example';

const headerText = (mail: ReceivedMail) => mail.raw.slice(0, mail.raw.indexOf('\r\n\r\n'));
/** A header's line as sent, unfolded. */
const rawHeader = (mail: ReceivedMail, name: string) => mail.parsed.headerLines.find((header) => header.key === name)?.line.replace(/\r?\n[ \t]+/g, '');

for (const { engine, skip } of engines) {
  describeOnEngine(`mail over SMTP on ${engine}`, skip, () => {
    let smtp: TestSmtpServer;
    let shop: PayingShop;
    let worker: MailWorker;
    const owner = 'owner@shop.example';
    const buyer = 'buyer@example.org';
    let publicOrderId: string;

    before(async () => {
      smtp = await startSmtpServer();
      shop = await startPayingShop(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: FROM }, { name: 'Tea & Co\r\nBcc: thief@evil.example' });
      await createUser(shop.service.context.db, { merchantId: shop.merchantId, email: owner, password: 'correct horse battery staple' });
      const context = shop.service.context;
      worker = startMailWorker(context, {
        render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
        transport: createMailTransport(context.config.mail, 1_000),
        pollIntervalMs: 20,
        retrySchedule: [50, 50, 50, 50, 50],
      });
    });
    after(async () => {
      await worker?.stop();
      await shop?.stop();
      await smtp?.close();
    });

    test('a paid session: the merchant user is told, with one-click unsubscribe, and the test money is named', async () => {
      const { sessionId, payer, offer } = await shop.readyToPay({ amount: 0.5, currency: 'USD', orderId: INJECTED_ORDER });
      const paid = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
      assert.equal(paid.status, 200, await paid.clone().text());
      publicOrderId = ((await paid.json()) as { paymentId: string }).paymentId;
      const [notice] = await waitFor(() => (mailsTo(smtp, owner).length ? mailsTo(smtp, owner) : undefined), 'the payment notice');
      assert.ok(notice);
      assert.deepEqual(notice.envelopeTo, [owner]);
      assert.equal(notice.parsed.subject, 'Test payment — no real money: Payment received: 0.50 USD for order order-7 Bcc: thief@evil.example');
      assert.doesNotMatch(headerText(notice), /^bcc:/im, 'no Bcc header came from the order id or the name');
      assert.equal(notice.parsed.from?.text, '"Shop payments" <payments@shop.example>');
      assert.match(notice.parsed.text ?? '', /TEST PAYMENT — NO REAL MONEY/);
      assert.match(notice.parsed.text ?? '', /Amount: +0\.50 USD/);
      assert.match(String(notice.parsed.html), /Test payment — no real money/);
      assert.match(String(notice.parsed.html), /Tea &amp; Co Bcc: thief@evil\.example|Tea &amp; Co\r?\nBcc/);
      assert.doesNotMatch(String(notice.parsed.html), /<img/, 'no image without a logo: nothing that tracks');
      const unsubscribe = /^List-Unsubscribe:\s*<(.+)>$/i.exec(rawHeader(notice, 'list-unsubscribe') ?? '')?.[1];
      assert.ok(unsubscribe, 'List-Unsubscribe names a URL');
      assert.equal(rawHeader(notice, 'list-unsubscribe-post'), 'List-Unsubscribe-Post: List-Unsubscribe=One-Click');
      assert.equal(notice.parsed.messageId?.endsWith('@shop.example>'), true);

      // The mail client's one-click POST (RFC 8058): no cookie, no token but the link's own.
      const url = new URL(unsubscribe);
      const oneClick = await shop.service.app.inject({
        method: 'POST',
        url: url.pathname + url.search,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });
      assert.equal(oneClick.statusCode, 200);
      const [user] = await shop.service.context.db.selectFrom('users').select('id').where('email', '=', owner).execute();
      assert.equal((await findPreferences(shop.service.context.db, user!.id)).payments, false);
      const forged = await shop.service.app.inject({ method: 'POST', url: url.pathname + url.search.replace(/token=[^&]+/, 'token=forged'), payload: '' });
      assert.equal(forged.statusCode, 404);
    });

    test('the buyer asks for the receipt on the hosted page: a bad address is refused by name, a good one gets the receipt with a working link', async () => {
      const refused = await new Browser(shop.service).askForReceipt(publicOrderId, 'buyer@example.org\r\nBcc: thief@evil.example');
      assert.equal(refused.statusCode, 400);
      assert.match(refused.body, /The email is not an email address/);
      const asked = await new Browser(shop.service).askForReceipt(publicOrderId, buyer);
      assert.equal(asked.statusCode, 200);
      assert.match(asked.body, /Your receipt is on its way/);
      const [receipt] = await waitFor(() => (mailsTo(smtp, buyer).length ? mailsTo(smtp, buyer) : undefined), 'the receipt');
      assert.ok(receipt);
      assert.deepEqual(receipt.envelopeTo, [buyer]);
      assert.equal(receipt.parsed.subject, 'Test payment — no real money: Your receipt from Tea & Co Bcc: thief@evil.example: 0.50 USD');
      assert.equal(rawHeader(receipt, 'list-unsubscribe'), undefined, 'a receipt is no notice: nothing to unsubscribe from');
      const link = `${shop.service.config.baseUrl}/checkout/v2/orders/receipt/${publicOrderId}`;
      assert.ok(receipt.parsed.text?.includes(`View your receipt: ${link}`));
      assert.match(String(receipt.parsed.html), new RegExp(`href="${link.replaceAll('.', '\\.')}"`));
      const opened = await shop.service.app.inject({ method: 'GET', url: new URL(link).pathname, headers: { accept: 'text/html' } });
      assert.equal(opened.statusCode, 200);
      assert.match(opened.body, /Receipt/);
      // Asked again: the same cause and recipient, so no second mail.
      await new Browser(shop.service).askForReceipt(publicOrderId, buyer);
      const rows = await listMails(shop.service.context.db, { limit: 100 });
      assert.equal(rows.filter((row) => row.recipient === buyer).length, 1);
    });

    test('an SMTP server that refuses, drops the connection or never answers leaves the mail queued with the reason, and it goes once the server takes it', async () => {
      const base = smtp.received.length;
      const verdicts = [{ refuse: 451, message: 'Try again later' }, 'drop', 'hang'] as const;
      smtp.verdict = (index) => verdicts[index - base] ?? 'accept';
      const target = 'second@example.org';
      const seen: string[] = [];
      const asked = await new Browser(shop.service).askForReceipt(publicOrderId, target);
      assert.equal(asked.statusCode, 200);
      await waitFor(async () => {
        const [row] = (await listMails(shop.service.context.db, { limit: 100 })).filter((mail) => mail.recipient === target);
        if (row?.lastError && !seen.includes(row.lastError)) seen.push(row.lastError);
        return row?.status === 'SENT';
      }, 'the mail sent after three failures');
      assert.ok(
        seen.some((error) => /451/.test(error)),
        `the refusal was recorded: ${seen.join(' | ')}`,
      );
      const [row] = (await listMails(shop.service.context.db, { limit: 100 })).filter((mail) => mail.recipient === target);
      assert.equal(row?.attempts, 4);
      assert.equal(mailsTo(smtp, target).length, 1);
    });

    test('the operator sees every mail with till mail list, and the failed ones on their own', async () => {
      const cli = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
      const env = {
        ...process.env,
        TILL_DATABASE_URL: shop.service.config.databaseUrl,
        TILL_DATA_DIR: shop.service.config.dataDir,
        TILL_SECRET_KEY: shop.service.config.secretKey.toString('hex'),
        TILL_LOG_LEVEL: 'silent',
      };
      const listed = await runNodeScript(cli, ['mail', 'list', '--json'], { env });
      assert.equal(listed.code, 0, listed.stderr);
      const { mails } = JSON.parse(listed.stdout) as { mails: { kind: string; to: string; status: string; attempts: number }[] };
      assert.deepEqual(
        mails.map((mail) => [mail.kind, mail.to, mail.status]).sort(),
        [
          ['payment_received', owner, 'SENT'],
          ['receipt', buyer, 'SENT'],
          ['receipt', 'second@example.org', 'SENT'],
        ].sort(),
      );
      const failed = await runNodeScript(cli, ['mail', 'list', '--status', 'failed'], { env });
      assert.equal(failed.stdout.trim(), 'No mail.');
      const wrong = await runNodeScript(cli, ['mail', 'list', '--status', 'lost'], { env });
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.stderr, /--status must be one of PENDING, SENT, FAILED, KEPT/);
    });

    test('a payout wallet changed on the dashboard: every user of the merchant is told, with the old and new wallet', async () => {
      const { email, password, browser } = await signedInMerchant(shop.service);
      const csrf = await browser.csrf('/dashboard/settings');
      const wallet = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
      const saved = await browser.request('POST', '/dashboard/settings/wallet', { csrf, wallet, confirm: 'BA72', password });
      assert.equal(saved.statusCode, 303, saved.body);
      const [mail] = await waitFor(() => (mailsTo(smtp, email).length ? mailsTo(smtp, email) : undefined), 'the wallet notice');
      assert.match(mail?.parsed.subject ?? '', /payout wallet was changed$/);
      assert.match(mail?.parsed.text ?? '', new RegExp(`New wallet: +${wallet}`));
      assert.match(mail?.parsed.text ?? '', /Previous wallet: +none/);
    });
  });
}
