import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccessible, browserSkip, launchChromium, screenshots } from '../testing/browser.ts';
import { createTestDatabase } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { proxiedPostgres, type TcpProxy } from '../testing/tcp-proxy.ts';

const { skip } = engines.find((e) => e.engine === 'postgres')!;

// The service reaches PostgreSQL through a proxy the test cuts, as a database that has gone away.
describeOnEngine('answers while the database cannot be reached, on postgres', skip, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: TcpProxy;
  let service: TestService;
  before(async () => {
    database = await createTestDatabase('postgres');
    let url: string;
    ({ proxy, url } = await proxiedPostgres(database.url));
    service = await startTestService('postgres', { TILL_DATABASE_URL: url });
  });
  after(async () => {
    proxy?.restore();
    await service?.stop();
    await proxy?.close();
    await database?.drop();
  });

  test('a page asked for by a browser is a page with Retry-After; the API answers its JSON; both serve again after', async () => {
    const { apiKey } = await service.merchant();
    proxy.cut();
    try {
      const browser = await service.app.inject({ method: 'GET', url: '/checkout/pay?uid=ps_unknown', headers: { accept: 'text/html,*/*' } });
      assert.equal(browser.statusCode, 503);
      assert.equal(browser.headers['retry-after'], '5');
      assert.match(String(browser.headers['content-type']), /^text\/html/);
      assert.match(String(browser.headers['content-security-policy']), /default-src/);
      assert.match(browser.body, /<h1>Back in a moment<\/h1>/);
      const api = await service.app.inject({ method: 'GET', url: '/api/checkout/v2/payment_session/ps_unknown', headers: { 'x-sc-apikey': apiKey } });
      assert.equal(api.statusCode, 503);
      assert.equal(api.json().error.code, 'database_unreachable');
    } finally {
      proxy.restore();
    }
    const again = await service.app.inject({ method: 'GET', url: '/checkout/pay?uid=ps_unknown', headers: { accept: 'text/html' } });
    assert.equal(again.statusCode, 404);
  });

  test('in a browser: the page reads well on a phone and a desktop, and is accessible', { skip: browserSkip }, async () => {
    const base = await service.app.listen({ port: 0, host: '127.0.0.1' });
    const browser = await launchChromium();
    proxy.cut();
    try {
      const page = await browser.newPage();
      const answer = await page.goto(`${base}/checkout/pay?uid=ps_unknown`);
      assert.equal(answer?.status(), 503);
      assert.equal(await page.locator('h1').textContent(), 'Back in a moment');
      await assertAccessible(page);
      await screenshots(page, 'outage', 'database-unreachable');
    } finally {
      proxy.restore();
      await browser.close();
    }
  });
});
