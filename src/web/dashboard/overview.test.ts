// The overview: paid volume today and over 30 days with its daily chart, the last orders, the wallet
// and the webhook endpoint's state, from payments made on the sandbox chain; and none of it for
// another merchant's user.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../accounts/users.ts';
import { DAY_MS, paidVolume } from '../../payments/volume.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';
import { waitFor } from '../../testing/wait.ts';
import { webhookEndpointState } from '../../webhooks/endpoint-state.ts';
import { disableWebhook, setWebhook } from '../../webhooks/endpoints.ts';
import { startReceiver } from '../../webhooks/fixtures/receiver.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard overview on ${engine}`, skip, () => {
    let shop: PayingShop;
    let hook: Awaited<ReturnType<typeof startReceiver>>;
    let browser: Browser;
    const orders: string[] = [];

    before(async () => {
      // The merchant's server answers every webhook 500: its deliveries fail and are retried.
      hook = await startReceiver(() => ({ status: 500 }));
      shop = await startPayingShop(engine, { TILL_WEBHOOK_RETRY_SCHEDULE: '50ms' }, { name: 'Corner Coffee', workers: true });
      const db = shop.service.context.db;
      await setWebhook(db, shop.service.config.secretKey, shop.merchantId, { url: hook.url }, 'sandbox');
      for (const [amount, orderId] of [
        [0.01, 'first-order'],
        [0.02, 'second-order'],
      ] as const) {
        const { sessionId, payer, offer } = await shop.readyToPay({
          amount,
          currency: 'USD',
          orderId,
          ...(orderId === 'second-order' ? { concept: 'Oat latte' } : {}),
        });
        const response = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
        const answer = (await response.json()) as { paymentId: string };
        assert.equal(response.status, 200, JSON.stringify(answer));
        orders.push(answer.paymentId);
      }
      await createUser(db, { merchantId: shop.merchantId, email: `owner-${engine}@corner.example`, password: PASSWORD });
      browser = new Browser(shop.service);
      assert.equal((await browser.signIn(`owner-${engine}@corner.example`, PASSWORD)).headers.location, '/dashboard');
      await waitFor(async () => {
        const state = await webhookEndpointState(db, 'sandbox', shop.merchantId, 0);
        return state.configured && state.failed + state.retrying > 0;
      }, 'a failed webhook attempt');
    });
    after(async () => {
      await shop?.stop();
      await hook?.close();
    });

    test('paid volume today and over 30 days, the daily series, in one grouped query', async () => {
      const now = Date.now();
      const volume = await paidVolume(shop.service.context.db, 'sandbox', shop.merchantId, now);
      assert.deepEqual(volume.today, { count: 2, usdc: 30_000n });
      assert.deepEqual(volume.lastDays, { count: 2, usdc: 30_000n });
      assert.equal(volume.daily.length, 30);
      assert.equal(volume.daily.at(-1)?.day, Math.floor(now / DAY_MS) * DAY_MS);
      // Two days on, they are two days back in the series, no longer today's; past the window, gone.
      const later = await paidVolume(shop.service.context.db, 'sandbox', shop.merchantId, now + 2 * DAY_MS);
      assert.deepEqual(later.today, { count: 0, usdc: 0n });
      assert.deepEqual(later.daily.at(-3), { day: Math.floor(now / DAY_MS) * DAY_MS, count: 2, usdc: 30_000n });
      assert.deepEqual((await paidVolume(shop.service.context.db, 'sandbox', shop.merchantId, now + 30 * DAY_MS)).lastDays, { count: 0, usdc: 0n });
    });

    test('the overview shows the volume, the chart, the last orders, the wallet and the failing webhook', async () => {
      const page = await browser.request('GET', '/dashboard');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h1>Corner Coffee<\/h1>/);
      assert.match(page.body, /<dt>Today \(UTC\)<\/dt><dd><strong>0\.03 USDC<\/strong><span class="note">2 payments<\/span>/);
      assert.match(page.body, /<dt>Last 30 days<\/dt><dd><strong>0\.03 USDC<\/strong>/);
      assert.match(page.body, /<svg viewBox="0 0 600 140" role="img" aria-labelledby="chart-title chart-desc"/);
      assert.equal(page.body.match(/<rect class="bar"/g)?.length, 1, 'one day with payments');
      assert.equal(page.body.match(/<rect class="bar bar-empty"/g)?.length, 29);
      assert.ok(!/ style=/.test(page.body), 'no style attribute: the CSP forbids them');
      for (const order of orders) assert.ok(page.body.includes(`href="/checkout/v2/orders/receipt/${order}"`), order);
      assert.ok(page.body.indexOf(orders[1]!) < page.body.indexOf(orders[0]!), 'newest first');
      assert.match(page.body, /second-order/);
      assert.match(page.body, /<td data-label="Amount">0\.02 USD<\/td>/);
      assert.match(page.body, /<td data-label="For">Oat latte<\/td>/, 'what was paid for');
      assert.match(page.body, /<td data-label="For"><\/td>/, 'empty without a concept');
      assert.ok(page.body.includes(`<code class="address">${shop.merchantWallet}</code>`));
      assert.match(
        page.body,
        /<li class="attention"><strong>Webhook endpoint:<\/strong> <code>http:\/\/127\.0\.0\.1:\d+\/[^<]*<\/code>: in the last 30 days, deliveries (\d+ failed|\d+ being retried)/,
      );
      assert.match(page.body, /Mode:<\/strong> test/);
    });

    test('an endpoint turned off is said so', async () => {
      await disableWebhook(shop.service.context.db, shop.merchantId, 'sandbox', 'too many failures', Date.now());
      const page = await browser.request('GET', '/dashboard');
      assert.match(page.body, /is <strong>off<\/strong> since [^<]+ \(too many failures\)/);
    });

    test("another merchant's user sees none of it: no volume, orders, wallet or endpoint", async () => {
      const other = await signedInMerchant(shop.service);
      const page = await other.browser.request('GET', '/dashboard');
      assert.equal(page.statusCode, 200);
      for (const order of orders) assert.ok(!page.body.includes(order));
      assert.ok(!page.body.includes('second-order') && !page.body.includes(shop.merchantWallet) && !page.body.includes(hook.url));
      assert.match(page.body, /<dt>Last 30 days<\/dt><dd><strong>0\.00 USDC<\/strong><span class="note">0 payments/);
      assert.match(page.body, /No paid orders yet/);
      assert.match(page.body, /Payout wallet:<\/strong> not set/);
      assert.match(page.body, /Webhook endpoint:<\/strong> not set/);
      // The first merchant's receipt link is public by design (E4), but its dashboard is not reachable with another session.
      assert.ok(!(await other.browser.request('GET', `/dashboard?merchant=${shop.merchantId}`)).body.includes('Corner Coffee'));
    });
  });
}
