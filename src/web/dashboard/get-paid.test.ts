// Get paid: API keys and clients created (shown once), listed masked, used, revoked; only the
// signed-in merchant's, and never without the form's CSRF token.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { csrfField, signedInMerchant } from '../../testing/page-browser.ts';

const newKey = (html: string) => /id="new-api-key" type="text" readonly value="(sk_test_[\w-]+)"/.exec(html)?.[1];

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's Get paid page on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    const e1 = (apiKey: string) =>
      service.app.inject({
        method: 'POST',
        url: '/api/checkout/v2/payment_session',
        headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey },
        payload: { amount: 5, currency: 'USD' },
      });

    test('an API key is shown once, in the curl command too, then listed masked with its last use; revoked, it is refused', async () => {
      const { browser } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/get-paid');
      const created = await browser.request('POST', '/dashboard/get-paid/api-keys', { csrf });
      assert.equal(created.statusCode, 200);
      const apiKey = newKey(created.body);
      assert.ok(apiKey, 'the new key is on the page');
      assert.ok(created.body.includes(`-H &#39;X-SC-ApiKey: ${apiKey}&#39;`), 'the curl command carries it');
      assert.ok(created.body.includes('http://till.test/api/checkout/v2/payment_session'));
      assert.equal((await e1(apiKey)).statusCode, 201);

      const listed = await browser.request('GET', '/dashboard/get-paid');
      assert.ok(!listed.body.includes(apiKey), 'never shown again');
      assert.ok(listed.body.includes(`<code>…${apiKey.slice(-4)}</code>`));
      const row = listed.body.split('<tr>').find((line) => line.includes(`…${apiKey.slice(-4)}<`))!;
      assert.match(row, /Last used"><time/, 'its use is shown');
      const keyId = /action="\/dashboard\/get-paid\/api-keys\/(key_[^/]+)\/revoke"/.exec(row)?.[1];
      assert.ok(keyId);

      const revoked = await browser.request('POST', `/dashboard/get-paid/api-keys/${keyId}/revoke`, { csrf });
      assert.equal(revoked.statusCode, 303);
      assert.equal(revoked.headers.location, '/dashboard/get-paid?done=key-revoked');
      assert.equal((await e1(apiKey)).statusCode, 401);
      assert.match((await browser.request('GET', '/dashboard/get-paid?done=key-revoked')).body, /API key revoked/);
    });

    test('a client is shown once with its secret, gets a token, is listed and revoked', async () => {
      const { browser } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/get-paid');
      const created = await browser.request('POST', '/dashboard/get-paid/clients', { csrf });
      assert.equal(created.statusCode, 200);
      const clientId = /id="new-client-id" type="text" readonly value="(cli_[\w-]+)"/.exec(created.body)?.[1];
      const clientSecret = /id="new-client-secret" type="text" readonly value="(cs_[\w-]+)"/.exec(created.body)?.[1];
      assert.ok(clientId && clientSecret);
      const token = () =>
        service.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
        });
      assert.equal((await token()).statusCode, 200);
      const listed = await browser.request('GET', '/dashboard/get-paid');
      assert.ok(listed.body.includes(`<code>${clientId}</code>`));
      assert.ok(!listed.body.includes(clientSecret));
      const revoked = await browser.request('POST', `/dashboard/get-paid/clients/${clientId}/revoke`, { csrf });
      assert.equal(revoked.statusCode, 303);
      assert.notEqual((await token()).statusCode, 200);
      assert.ok(!(await browser.request('GET', '/dashboard/get-paid')).body.includes(`<code>${clientId}</code>`));
    });

    test('without the CSRF token nothing is created', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const refused = await browser.request('POST', '/dashboard/get-paid/api-keys', { csrf: 'forged' });
      assert.equal(refused.statusCode, 403);
      assert.equal(newKey(refused.body), undefined);
      const keys = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(keys.length, 1, 'only the key the test merchant was made with');
    });

    test('a form post from another site is refused; our own (Origin: null under no-referrer) is taken', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/get-paid');
      const post = (headers: Record<string, string>) =>
        service.app.inject({
          method: 'POST',
          url: '/dashboard/get-paid/api-keys',
          headers: {
            cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
            'content-type': 'application/x-www-form-urlencoded',
            ...headers,
          },
          payload: new URLSearchParams({ csrf }).toString(),
        });
      assert.equal((await post({ origin: 'https://evil.example' })).statusCode, 403);
      assert.equal((await post({ origin: 'null', 'sec-fetch-site': 'cross-site' })).statusCode, 403);
      assert.equal((await post({ 'sec-fetch-site': 'same-site' })).statusCode, 403);
      const keys = () => service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal((await keys()).length, 1);
      assert.equal((await post({ origin: 'null', 'sec-fetch-site': 'same-origin' })).statusCode, 200);
      assert.equal((await post({ origin: 'http://till.test', 'sec-fetch-site': 'same-origin' })).statusCode, 200);
      assert.equal((await keys()).length, 3);
    });

    test("another merchant's keys and clients are neither listed nor revocable (404)", async () => {
      const first = await signedInMerchant(service);
      const firstCsrf = await first.browser.csrf('/dashboard/get-paid');
      const keyPage = await first.browser.request('POST', '/dashboard/get-paid/api-keys', { csrf: firstCsrf });
      const apiKey = newKey(keyPage.body)!;
      const clientPage = await first.browser.request('POST', '/dashboard/get-paid/clients', { csrf: firstCsrf });
      const clientId = /id="new-client-id" type="text" readonly value="(cli_[\w-]+)"/.exec(clientPage.body)![1]!;
      const keyId = /api-keys\/(key_[^/]+)\/revoke/.exec(clientPage.body)![1]!;

      const other = await signedInMerchant(service);
      const otherPage = await other.browser.request('GET', '/dashboard/get-paid');
      assert.ok(!otherPage.body.includes(keyId) && !otherPage.body.includes(clientId) && !otherPage.body.includes(`…${apiKey.slice(-4)}<`));
      const csrf = csrfField(otherPage.body);
      assert.equal((await other.browser.request('POST', `/dashboard/get-paid/api-keys/${keyId}/revoke`, { csrf })).statusCode, 404);
      assert.equal((await other.browser.request('POST', `/dashboard/get-paid/clients/${clientId}/revoke`, { csrf })).statusCode, 404);
      assert.equal((await e1(apiKey)).statusCode, 201, 'the key still works');
    });
  });
}
