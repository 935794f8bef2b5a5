// Payment links: created from the form as STATIC or TRANSIENT sessions, listed newest first, shown
// with their URL and QR code, edited with E2's rules, archived (hidden, no longer payable); refusals
// name the field and save nothing; only the signed-in merchant's links, never without the CSRF token.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { archiveSession, startPayment } from '../../sessions/sessions.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { type Browser, csrfField, signedInMerchant } from '../../testing/page-browser.ts';

const WALLET = '0x1111111111111111111111111111111111111111';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's Payment links on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    async function createLink(browser: Browser, fields: Record<string, string>) {
      const csrf = await browser.csrf('/dashboard/links');
      return browser.request('POST', '/dashboard/links', { csrf, currency: 'USD', ...fields });
    }
    const linkId = (location: string | string[] | undefined) => /^\/dashboard\/links\/(ps_[\w-]+)\?done=created$/.exec(String(location))?.[1];

    test('a STATIC link is created, listed, shown with its URL and QR code, and is a session E1 would have made', async () => {
      const { browser, merchantId } = await signedInMerchant(service, { walletAddress: WALLET });
      const created = await createLink(browser, {
        orderType: 'STATIC',
        amount: '12.50',
        concept: 'Donation',
        editable: 'on',
        minAmount: '2',
        successUrl: 'https://shop.example/thanks',
      });
      assert.equal(created.statusCode, 303);
      const id = linkId(created.headers.location);
      assert.ok(id);
      const detail = await browser.request('GET', created.headers.location as string);
      assert.equal(detail.statusCode, 200);
      assert.match(detail.body, /Payment link created/);
      assert.ok(detail.body.includes(`value="http://till.test/checkout/pay?uid=${id}"`));
      assert.match(detail.body, /<svg role="img" aria-labelledby="qr-caption"/);
      assert.match(detail.body, /No payment yet/);
      const row = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.merchant_id, merchantId);
      assert.equal(row.order_type, 'STATIC');
      assert.equal(row.amount_minor, 1250n);
      assert.equal(row.min_amount_minor, 200n);
      assert.equal(row.editable, 1);
      assert.equal(row.expires_at, null);
      assert.equal(row.success_url, 'https://shop.example/thanks');
      assert.equal(row.cancel_url, null);

      const second = await createLink(browser, { orderType: 'TRANSIENT', amount: '3', concept: 'Coffee' });
      const list = await browser.request('GET', '/dashboard/links');
      const donation = list.body.indexOf('>Donation</a>');
      const coffee = list.body.indexOf('>Coffee</a>');
      assert.ok(coffee > 0 && donation > coffee, 'newest first');
      const transient = await service.context.db
        .selectFrom('payment_sessions')
        .selectAll()
        .where('id', '=', linkId(second.headers.location)!)
        .executeTakeFirstOrThrow();
      assert.equal(transient.order_type, 'TRANSIENT');
      assert.ok(transient.expires_at !== null);
    });

    test('refusals name the field, keep what was typed, and save nothing', async () => {
      const { browser, merchantId } = await signedInMerchant(service, { walletAddress: WALLET });
      const cases: [Record<string, string>, RegExp][] = [
        [{ amount: '' }, /Amount: amount is required/],
        [{ amount: '1.234' }, /Amount: amount .*2 decimals/],
        [{ amount: '5', currency: 'XYZ' }, /Currency: currency must be an ISO 4217/],
        [{ amount: '5', minAmount: '1' }, /Minimum amount: minAmount is only allowed with editable/],
        [{ amount: '5', editable: 'on', minAmount: '9' }, /Minimum amount: minAmount must not be above amount/],
        [{ amount: '5', successUrl: 'javascript:alert(1)' }, /Success URL: successUrl is invalid: must be an absolute http\(s\) URL/],
        [{ amount: '5', orderType: 'FOREVER' }, /Kind: orderType must be STATIC or TRANSIENT/],
      ];
      for (const [fields, message] of cases) {
        const answer = await createLink(browser, { concept: 'Kept text', ...fields });
        assert.equal(answer.statusCode, 400, JSON.stringify(fields));
        assert.match(answer.body, message);
        assert.match(answer.body, /role="alert"/);
        assert.match(answer.body, /aria-invalid="true"/);
        assert.match(answer.body, /id="concept" name="concept" value="Kept text"/);
      }
      const rows = await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(rows.length, 0);
    });

    test('a link is edited with E2’s fields; a refused edit changes nothing', async () => {
      const { browser } = await signedInMerchant(service, { walletAddress: WALLET });
      const id = linkId((await createLink(browser, { orderType: 'STATIC', amount: '10', concept: 'Lesson' })).headers.location)!;
      const csrf = await browser.csrf(`/dashboard/links/${id}`);
      const saved = await browser.request('POST', `/dashboard/links/${id}`, {
        csrf,
        amount: '15',
        currency: 'EUR',
        concept: 'Long lesson',
        editable: 'on',
        minAmount: '5',
        cancelUrl: 'https://shop.example/cart',
      });
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, `/dashboard/links/${id}?done=saved`);
      const read = async () => service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      const edited = await read();
      assert.deepEqual(
        [edited.amount_minor, edited.currency, edited.concept, edited.editable, edited.min_amount_minor, edited.cancel_url, edited.version],
        [1500n, 'EUR', 'Long lesson', 1, 500n, 'https://shop.example/cart', 2],
      );

      const refused = await browser.request('POST', `/dashboard/links/${id}`, {
        csrf,
        amount: '20',
        currency: 'EUR',
        concept: 'Changed',
        failUrl: 'not a url',
      });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.body, /Fail URL: failUrl is invalid/);
      assert.match(refused.body, /id="concept" name="concept" value="Changed"/, 'the form keeps what was typed');
      assert.deepEqual(await read(), edited, 'nothing half-saved');
    });

    test('an archived link leaves the list, cannot be paid or changed, and is listed under archived', async () => {
      const { browser } = await signedInMerchant(service, { walletAddress: WALLET });
      const id = linkId((await createLink(browser, { orderType: 'STATIC', amount: '4', concept: 'Old offer' })).headers.location)!;
      const checkout = () => service.app.inject({ method: 'GET', url: `/checkout/pay?uid=${id}` });
      assert.notEqual((await checkout()).statusCode, 410);
      const csrf = await browser.csrf(`/dashboard/links/${id}`);
      const archived = await browser.request('POST', `/dashboard/links/${id}/archive`, { csrf });
      assert.equal(archived.statusCode, 303);
      assert.equal(archived.headers.location, '/dashboard/links?done=archived');
      const list = await browser.request('GET', '/dashboard/links?done=archived');
      assert.match(list.body, /Payment link archived/);
      assert.ok(!list.body.includes('Old offer'));
      assert.ok((await browser.request('GET', '/dashboard/links?archived=1')).body.includes('Old offer'));
      assert.equal((await checkout()).statusCode, 410, 'the hosted page says it can no longer be paid');
      const edit = await browser.request('POST', `/dashboard/links/${id}`, { csrf, amount: '5', currency: 'USD' });
      assert.equal(edit.statusCode, 409);
      assert.match((await browser.request('GET', `/dashboard/links/${id}`)).body, /Archived <time/);
      assert.equal((await browser.request('POST', `/dashboard/links/${id}/archive`, { csrf })).statusCode, 404, 'archived already');
    });

    test('archived, a session shows EXPIRED over the API, E2 refuses it, and a payment quoted before cannot start', async () => {
      const { merchantId, apiKey } = await service.merchant({ walletAddress: WALLET });
      const api = (method: 'GET' | 'PUT', url: string, payload?: object) =>
        service.app.inject({
          method,
          url,
          headers: { 'x-sc-apikey': apiKey, ...(payload ? { 'content-type': 'application/json' } : {}) },
          ...(payload ? { payload } : {}),
        });
      const created = await service.app.inject({
        method: 'POST',
        url: '/api/checkout/v2/payment_session',
        headers: { 'x-sc-apikey': apiKey, 'content-type': 'application/json' },
        payload: { amount: 3, currency: 'USD', orderType: 'STATIC' },
      });
      const { sessionId } = created.json() as { sessionId: string };
      assert.equal(await archiveSession(service.context.db, 'sandbox', 'mer_other', sessionId, Date.now()), false, "another merchant's archive does nothing");
      assert.equal(await archiveSession(service.context.db, 'sandbox', merchantId, sessionId, Date.now()), true);
      assert.equal((await api('GET', `/api/checkout/v2/payment_session/${sessionId}`)).json().status, 'EXPIRED');
      const update = await api('PUT', '/api/checkout/v2/payment_session', { sessionId, amount: 4 });
      assert.equal(update.statusCode, 409);
      assert.equal(update.json().error.code, 'session_expired');
      const started = await service.context.db
        .transaction()
        .execute((trx) => startPayment(trx, sessionId, { quotedVersion: 1, payTo: WALLET, now: Date.now() }));
      assert.equal(started, undefined);
    });

    test('without the CSRF token nothing is created, changed or archived', async () => {
      const { browser, merchantId } = await signedInMerchant(service, { walletAddress: WALLET });
      const id = linkId((await createLink(browser, { orderType: 'STATIC', amount: '4', concept: 'Kept' })).headers.location)!;
      assert.equal((await browser.request('POST', '/dashboard/links', { csrf: 'forged', amount: '1', currency: 'USD' })).statusCode, 403);
      assert.equal((await browser.request('POST', `/dashboard/links/${id}`, { amount: '9', currency: 'USD' })).statusCode, 403);
      assert.equal((await browser.request('POST', `/dashboard/links/${id}/archive`, { csrf: '' })).statusCode, 403);
      const rows = await service.context.db.selectFrom('payment_sessions').selectAll().where('merchant_id', '=', merchantId).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.amount_minor, 400n);
      assert.equal(rows[0]!.archived_at, null);
    });

    test("another merchant's user can neither see nor change nor archive this merchant's links (404)", async () => {
      const first = await signedInMerchant(service, { walletAddress: WALLET });
      const id = linkId((await createLink(first.browser, { orderType: 'STATIC', amount: '4', concept: 'Private link' })).headers.location)!;
      const other = await signedInMerchant(service, { walletAddress: WALLET });
      const list = await other.browser.request('GET', '/dashboard/links');
      assert.ok(!list.body.includes(id) && !list.body.includes('Private link'));
      const csrf = csrfField(list.body);
      assert.equal((await other.browser.request('GET', `/dashboard/links/${id}`)).statusCode, 404);
      assert.equal((await other.browser.request('POST', `/dashboard/links/${id}`, { csrf, amount: '1', currency: 'USD' })).statusCode, 404);
      assert.equal((await other.browser.request('POST', `/dashboard/links/${id}/archive`, { csrf })).statusCode, 404);
      const row = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual([row.amount_minor, row.archived_at, row.version], [400n, null, 1]);
    });
  });
}
