import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../testing/harness.ts';
import { Browser } from '../testing/page-browser.ts';
import { sessionRequest } from '../testing/shop.ts';
import { mailsTo, startSmtpMailWorker, startSmtpServer, type TestSmtpServer } from '../testing/smtp.ts';
import { waitFor } from '../testing/wait.ts';
import { listMails } from './outbox.ts';
import type { MailWorker } from './worker.ts';

// The merchant's server gives the buyer's address when it creates the session (E1's buyerEmail), or
// changes it (E2): the buyer gets the receipt once the session is paid, in the payment's transaction.
for (const { engine, skip } of engines) {
  describeOnEngine(`the buyer's address given at session creation on ${engine}`, skip, () => {
    let smtp: TestSmtpServer;
    let shop: PayingShop;
    let worker: MailWorker;

    before(async () => {
      smtp = await startSmtpServer();
      shop = await startPayingShop(engine, { TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'payments@shop.example' }, { name: 'Tea & Co' });
      worker = startSmtpMailWorker(shop.service.context);
    });
    after(async () => {
      await worker?.stop();
      await shop?.stop();
      await smtp?.close();
    });

    const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) => sessionRequest(shop.baseUrl, shop.apiKey, 'POST', body, headers);
    const update = (body: Record<string, unknown>) => sessionRequest(shop.baseUrl, shop.apiKey, 'PUT', body);
    const created = async (response: Response) => {
      const text = await response.text();
      assert.equal(response.status, 201, text);
      return (JSON.parse(text) as { sessionId: string }).sessionId;
    };
    /** Pays the session and answers its public order id. */
    const payFor = async (sessionId: string) => {
      const payer = await shop.fundedPayer();
      const paid = await shop.pay(sessionId, (await shop.signedPayment(payer, await shop.challenge(sessionId))).header);
      assert.equal(paid.status, 200, await paid.clone().text());
      return ((await paid.json()) as { paymentId: string }).paymentId;
    };
    const receiptsOf = async (sessionId: string) =>
      (await listMails(shop.service.context.db, { limit: 500 })).filter((mail) => mail.data.kind === 'receipt' && mail.data.payment.sessionId === sessionId);

    test('an address that is not one, or one on a STATIC session, is refused with 400 naming buyerEmail, on E1 and E2; nothing is made', async () => {
      for (const buyerEmail of ['not-an-address', 'buyer@example.org\r\nBcc: thief@evil.example', `${'a'.repeat(250)}@example.org`, 42]) {
        const refused = await create({ amount: 0.5, currency: 'USD', orderId: 'refused-order', buyerEmail });
        assert.equal(refused.status, 400);
        const { error } = (await refused.json()) as { error: { code: string; field?: string; message: string } };
        assert.equal(error.field, 'buyerEmail', error.message);
      }
      const onStatic = await create({ amount: 0.5, currency: 'USD', orderType: 'STATIC', buyerEmail: 'buyer@example.org' });
      assert.equal(onStatic.status, 400);
      const staticError = ((await onStatic.json()) as { error: { field: string; message: string } }).error;
      assert.equal(staticError.field, 'buyerEmail');
      assert.match(staticError.message, /TRANSIENT session only/);
      // The refused orderId was never taken: no session was made.
      await created(await create({ amount: 0.5, currency: 'USD', orderId: 'refused-order' }));

      const staticSession = await created(await create({ amount: 0.5, currency: 'USD', orderType: 'STATIC' }));
      const staticUpdate = await update({ sessionId: staticSession, buyerEmail: 'buyer@example.org', concept: 'changed' });
      assert.equal(staticUpdate.status, 400);
      assert.equal(((await staticUpdate.json()) as { error: { field: string } }).error.field, 'buyerEmail');
      const transient = await created(await create({ amount: 0.5, currency: 'USD' }));
      const badUpdate = await update({ sessionId: transient, buyerEmail: 'nobody' });
      assert.equal(badUpdate.status, 400);
      assert.equal(((await badUpdate.json()) as { error: { field: string } }).error.field, 'buyerEmail');
    });

    test('the address given at creation gets the receipt once the session is paid, once, with or without an Idempotency-Key', async () => {
      const plain = await created(await create({ amount: 0.5, currency: 'USD', concept: 'Green tea', buyerEmail: ' Plain.Buyer@Example.org ' }));
      const body = { amount: 0.25, currency: 'USD', concept: 'Black tea', buyerEmail: 'keyed@example.org' };
      const keyed = await created(await create(body, { 'idempotency-key': `buyer-email-${engine}` }));
      assert.equal(await created(await create(body, { 'idempotency-key': `buyer-email-${engine}` })), keyed, 'the retry replays the first answer');

      const plainOrder = await payFor(plain);
      const [plainReceipt] = await waitFor(
        () => (mailsTo(smtp, 'plain.buyer@example.org').length ? mailsTo(smtp, 'plain.buyer@example.org') : undefined),
        'the receipt',
      );
      assert.deepEqual(plainReceipt?.envelopeTo, ['plain.buyer@example.org']);
      assert.equal(plainReceipt?.parsed.subject, 'Test payment — no real money: Your receipt from Tea & Co: 0.50 USD');
      assert.ok(plainReceipt?.parsed.text?.includes(`View your receipt: ${shop.service.config.baseUrl}/checkout/v2/orders/receipt/${plainOrder}`));
      assert.match(plainReceipt?.parsed.text ?? '', /Green tea/);
      assert.match(String(plainReceipt?.parsed.html), /Green tea/);

      await payFor(keyed);
      await waitFor(() => mailsTo(smtp, 'keyed@example.org').length === 1, 'the receipt of the session made with an Idempotency-Key');
      assert.equal((await receiptsOf(keyed)).length, 1, 'the retried creation stored the address once');

      // The buyer asks again from the hosted page with the same address: still one receipt.
      const again = await new Browser(shop.service).askForReceipt(plainOrder, 'plain.buyer@example.org');
      assert.equal(again.statusCode, 200, again.body);
      assert.equal((await receiptsOf(plain)).length, 1);
      assert.equal(mailsTo(smtp, 'plain.buyer@example.org').length, 1);
    });

    test('E2 replaces the address (the receipt goes to the new one only) and null removes it (no receipt)', async () => {
      const moved = await created(await create({ amount: 0.5, currency: 'USD', buyerEmail: 'old@example.org' }));
      const changed = await update({ sessionId: moved, buyerEmail: 'new@example.org' });
      assert.equal(changed.status, 200, await changed.clone().text());
      const removed = await created(await create({ amount: 0.5, currency: 'USD', buyerEmail: 'gone@example.org' }));
      assert.equal((await update({ sessionId: removed, buyerEmail: null })).status, 200);

      await payFor(moved);
      await payFor(removed);
      await waitFor(() => mailsTo(smtp, 'new@example.org').length === 1, 'the receipt at the new address');
      // Both payments' mails were queued in their transactions: what is not in the outbox is never sent.
      assert.deepEqual(
        (await receiptsOf(moved)).map((mail) => mail.recipient),
        ['new@example.org'],
      );
      assert.deepEqual(await receiptsOf(removed), []);
      assert.equal(mailsTo(smtp, 'old@example.org').length + mailsTo(smtp, 'gone@example.org').length, 0);
    });
  });
}
