// Test and live side by side in Debian's Chromium: the dashboard's "Test mode" switch and its banner
// (switching changes what orders, payment links and API keys show), and the hosted page of a test
// session (says so, offers the sandbox wallet) beside a live session's (never). The service has live
// settings and test mode beside them, as a deployment that went live. axe-core on every page;
// phone and desktop screenshots under artifacts/modes/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { createApiKey } from '../../merchants/api-keys.ts';
import { startSandbox } from '../../sandbox/index.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots } from '../../testing/browser.ts';
import { freePort } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { newAccount } from '../../testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment } from '../../testing/shop.ts';

const EMAIL = 'owner@two-modes.example';
const PASSWORD = 'correct horse battery staple';

describe('test and live side by side in Chromium: the switch, the banner, the hosted pages', { skip: browserSkip }, () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  let service: TestService;
  let browser: Browser;
  let baseUrl: string;
  let testSession: string;
  let liveSession: string;
  let testKey: string;
  let liveKey: string;

  before(async () => {
    const port = await freePort();
    sandbox = await startSandbox({ blockIntervalMs: 0 });
    [service, browser] = await Promise.all([
      // Live settings (a facilitator, no TILL_SANDBOX) with test mode beside them: both modes pay, each
      // on its own rails. Live's stand in for Base on the same local chain; the pages tell them apart by mode.
      startTestService('sqlite', {
        TILL_FACILITATOR_URL: sandbox.facilitatorUrl,
        TILL_BASE_RPC_URL: sandbox.rpcUrl,
        TILL_USDC_ADDRESS: sandbox.usdcAddress,
        TILL_MODES: 'test,live',
        TILL_SANDBOX_URL: sandbox.url,
        TILL_TEST_USDC_ADDRESS: sandbox.usdcAddress,
        TILL_BASE_URL: `http://127.0.0.1:${port}`,
      }),
      launchChromium(),
    ]);
    baseUrl = await service.app.listen({ port, host: '127.0.0.1' });
    const { merchantId, apiKey } = await service.merchant({ name: 'Two Modes Shop', walletAddress: newAccount().address });
    // The harness's key is of the deployment's main mode: live here.
    liveKey = apiKey;
    testKey = (await createApiKey(service.context.db, merchantId, 'test')).apiKey;
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
    // A paid test order, and an open session of each mode.
    const paidSession = await createSession(baseUrl, testKey, { amount: 4.5, currency: 'USD', orderId: 'test-paid-order', concept: 'Test latte' });
    const payer = await fundedPayer(sandbox, '20');
    const offer = await challenge(baseUrl, paidSession);
    const paid = await pay(baseUrl, paidSession, (await signedPayment(payer, sandbox.usdcAddress, offer)).header);
    assert.equal(paid.status, 200, await paid.text());
    testSession = await createSession(baseUrl, testKey, { amount: 3, currency: 'USD', orderId: 'test-open-order', concept: 'Test espresso' });
    liveSession = await createSession(baseUrl, liveKey, { amount: 7, currency: 'USD', orderId: 'live-open-order', concept: 'Live beans' });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    await sandbox?.stop();
  });

  const switchButton = (page: Page) => page.getByRole('switch', { name: 'Test mode' });
  const banner = (page: Page) => page.getByText('you are viewing test data; payments use fake money');

  test('the switch flips every page between live and test data, with a banner while test mode is on', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${baseUrl}/dashboard/orders`);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(`${baseUrl}/dashboard/orders`);

      // A deployment serving live opens in live: no banner, the switch off, no test order.
      assert.equal(await switchButton(page).getAttribute('aria-checked'), 'false');
      assert.equal(await banner(page).count(), 0);
      assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /test-paid-order/);
      await assertAccessible(page);
      await screenshots(page, 'modes', 'orders-live');

      await switchButton(page).click();
      await page.waitForURL(`${baseUrl}/dashboard/orders`);
      await banner(page).waitFor();
      assert.equal(await switchButton(page).getAttribute('aria-checked'), 'true');
      await page.locator('table.orders tbody tr').filter({ hasText: 'test-paid-order' }).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'modes', 'orders-test');

      // Payment links: each mode's sessions only; the choice is kept from page to page.
      await page.getByRole('link', { name: 'Payment links' }).click();
      await banner(page).waitFor();
      const links = (await page.locator('main').textContent()) ?? '';
      assert.match(links, /Test espresso/);
      assert.doesNotMatch(links, /Live beans/);
      await screenshots(page, 'modes', 'links-test');

      // API keys: the test key is listed in test mode, and a key made here is a test key.
      await page.getByRole('link', { name: 'Get paid' }).click();
      await page
        .locator('td[data-label="Key"]')
        .filter({ hasText: testKey.slice(-4) })
        .waitFor();
      assert.equal(
        await page
          .locator('td[data-label="Key"]')
          .filter({ hasText: liveKey.slice(-4) })
          .count(),
        0,
      );
      await page.getByRole('button', { name: 'Create an API key' }).click();
      assert.match((await page.getByLabel('API key', { exact: true }).inputValue()) ?? '', /^sk_test_/);
      await assertAccessible(page);
      await screenshots(page, 'modes', 'get-paid-test');

      // Back to live, on the page the switch was used on.
      await switchButton(page).click();
      await page.waitForURL(`${baseUrl}/dashboard/get-paid`);
      assert.equal(await banner(page).count(), 0);
      await page
        .locator('td[data-label="Key"]')
        .filter({ hasText: liveKey.slice(-4) })
        .waitFor();
      assert.equal(
        await page
          .locator('td[data-label="Key"]')
          .filter({ hasText: testKey.slice(-4) })
          .count(),
        0,
      );
      await page.getByRole('button', { name: 'Create an API key' }).click();
      assert.match((await page.getByLabel('API key', { exact: true }).inputValue()) ?? '', /^sk_live_/);
      await page.getByRole('link', { name: 'Payment links' }).click();
      const liveLinks = (await page.locator('main').textContent()) ?? '';
      assert.match(liveLinks, /Live beans/);
      assert.doesNotMatch(liveLinks, /Test espresso/);
      await screenshots(page, 'modes', 'links-live');
    } finally {
      await context.close();
    }
  });

  test("a test session's hosted page says so and offers the sandbox wallet; a live session's never does", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${baseUrl}/checkout/pay?uid=${testSession}`);
      await page.getByText('Test payment — no real money.').waitFor();
      await page.getByRole('button', { name: /Pay with Sandbox wallet/ }).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'modes', 'checkout-test');

      await page.goto(`${baseUrl}/checkout/pay?uid=${liveSession}`);
      // Payable, in live: the amount to pay, and only the wallets of the buyer's own browser.
      await page.getByRole('heading', { level: 1, name: 'Pay 7.00 USD' }).waitFor();
      await page.getByText('No browser wallet was found.').waitFor();
      const html = await page.content();
      assert.doesNotMatch(html, /Test payment|no real money|sandbox-banner/);
      assert.doesNotMatch(html, /checkout-sandbox-wallet/, 'no sandbox wallet script');
      assert.equal(await page.getByRole('button', { name: /Sandbox wallet/ }).count(), 0);
      await assertAccessible(page);
      await screenshots(page, 'modes', 'checkout-live');
    } finally {
      await context.close();
    }
  });
});
