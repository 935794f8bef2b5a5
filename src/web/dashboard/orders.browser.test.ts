// The dashboard's orders, notifications and developers pages in Debian's Chromium: a merchant with
// orders paid on the sandbox chain signs in, reads its orders and a receipt, sets its webhook URL,
// sees the orders received through the API, sends a test event and redelivers it by click, and
// revokes a coding agent by click. axe-core on every page; phone and desktop screenshots under
// artifacts/dashboard/.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { recordToolCall } from '../../mcp/audit.ts';
import { addConsent } from '../../oauth/grants.ts';
import { startSandbox } from '../../sandbox/index.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots } from '../../testing/browser.ts';
import { freePort, sandboxSettings } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { newAccount } from '../../testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment } from '../../testing/shop.ts';
import { waitFor } from '../../testing/wait.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const AGENT = 'Acme Coding Agent';

describe('the dashboard’s orders, notifications and developers pages in Chromium', { skip: browserSkip }, () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  let service: TestService;
  let browser: Browser;
  let baseUrl: string;
  let receiverUrl: string;
  const paid: string[] = [];
  const receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok, received'));
  });

  before(async () => {
    // The service's own address is its base URL: dashboard form posts check the Origin against it.
    const port = await freePort();
    sandbox = await startSandbox({ blockIntervalMs: 0 });
    [service, browser] = await Promise.all([
      startTestService('sqlite', { ...sandboxSettings(sandbox), TILL_BASE_URL: `http://127.0.0.1:${port}` }, { workers: true }),
      launchChromium(),
    ]);
    baseUrl = await service.app.listen({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/till-hooks`;
    const { merchantId, apiKey } = await service.merchant({ name: 'Corner Coffee', walletAddress: newAccount().address });
    const user = await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
    for (const [amount, orderId] of [
      [4.5, 'latte-0042'],
      [12, 'beans-1kg'],
      [2.25, 'espresso-7'],
    ] as const) {
      const sessionId = await createSession(baseUrl, apiKey, { amount, currency: 'USD', orderId, concept: 'Coffee' });
      const payer = await fundedPayer(sandbox, '20');
      const offer = await challenge(baseUrl, sessionId);
      const response = await pay(baseUrl, sessionId, (await signedPayment(payer, sandbox.usdcAddress, offer)).header);
      const answer = (await response.json()) as { paymentId: string };
      assert.equal(response.status, 200, JSON.stringify(answer));
      paid.push(answer.paymentId);
    }
    const grant = await service.context.db.transaction().execute((trx) =>
      addConsent(
        trx,
        {
          merchantId,
          userId: user.id,
          clientId: 'https://agents.acme.example/till/client.json',
          clientName: AGENT,
          scopes: ['orders:read', 'settings:read', 'refunds:write'],
          mode: 'sandbox',
        },
        Date.now(),
      ),
    );
    const call = { grantId: grant.id, clientId: grant.clientId, merchantId, mode: grant.mode };
    await recordToolCall(service.context.db, { ...call, tool: 'list_orders', outcome: 'ok', reason: null, arguments: { size: 20 } }, Date.now() - 2000);
    await recordToolCall(
      service.context.db,
      { ...call, tool: 'create_api_key', outcome: 'refused', reason: 'scope_missing', arguments: {} },
      Date.now() - 1000,
    );
  });
  after(async () => {
    await browser?.close();
    receiver.close();
    await service?.stop();
    await sandbox?.stop();
  });

  /** Deliveries the webhook worker has recorded as delivered (the notifications page shows them as Delivered). */
  const deliveredCount = async () =>
    (await service.context.db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'SUCCEEDED').execute()).length;

  test('orders with their receipt, a webhook delivery redelivered by click, a coding agent revoked by click', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // Signed out, the orders page goes on to sign in, which comes back.
      await page.goto(`${baseUrl}/dashboard/orders`);
      await page.waitForURL(/\/sign-in\?return_to=%2Fdashboard%2Forders/);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(`${baseUrl}/dashboard/orders`);

      // Orders: newest first, each with its receipt.
      const rows = page.locator('table.orders tbody tr');
      await rows.first().waitFor();
      assert.equal(await rows.count(), 3);
      assert.match((await rows.first().textContent()) ?? '', /espresso-7/);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'orders');
      await page.getByLabel('Order id or TX- id').fill('beans-1kg');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/q=beans-1kg/);
      assert.equal(await rows.count(), 1);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'orders-filtered');
      // The CSV of the current filter: the header and the one order.
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export these orders as CSV' }).click()]);
      assert.match(download.suggestedFilename(), /^orders-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
      assert.equal(csv.length, 3);
      assert.ok(csv[1]!.includes(`${paid[1]},SUCCESS,beans-1kg,`));
      await page.getByRole('link', { name: paid[1]! }).click();
      await page.waitForURL(`${baseUrl}/checkout/v2/orders/receipt/${paid[1]}`);
      await page.getByText('Corner Coffee').first().waitFor();

      // Notifications: the URL saved, a test event sent and delivered, then redelivered.
      await page.goto(`${baseUrl}/dashboard/notifications`);
      await page.getByLabel('URL').fill(receiverUrl);
      await page.getByLabel('payment.failed').check();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('status').getByText('Webhook settings saved').waitFor();
      await page.getByRole('button', { name: 'Send a test event' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/notifications?sent=1`);
      const delivered = page.locator('.delivery', { hasText: 'Delivered' });
      await waitFor(async () => (await deliveredCount()) >= 1, 'the test event to be delivered');
      await page.reload();
      assert.equal(await delivered.count(), 1);
      // The three sessions made through the API, with their status.
      const apiOrders = page.locator('table.api-orders tbody tr');
      assert.equal(await apiOrders.count(), 3);
      assert.match((await apiOrders.first().textContent()) ?? '', /espresso-7[\s\S]*Paid/);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'notifications');
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: /^Redeliver event / }).click();
      await page.waitForURL(`${baseUrl}/dashboard/notifications?redelivered=1`);
      await waitFor(async () => (await deliveredCount()) >= 2, 'the redelivered event to be delivered');
      await page.reload();
      assert.equal(await delivered.count(), 2);
      await page.getByLabel('Your password', { exact: true }).first().fill(PASSWORD);
      await page.getByRole('button', { name: 'Reveal' }).click();
      await page.locator('dl.secrets').waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'notifications-redelivered');

      // Developers: the agent and its calls; revoked by click.
      await page.goto(`${baseUrl}/dashboard/developers`);
      const row = page.getByRole('row', { name: new RegExp(AGENT) }).first();
      await row.waitFor();
      await page.getByText('scope_missing').waitFor();
      // Its refund limits: none until set, then set by the merchant's form.
      await row.getByText('No limits set: may not refund').waitFor();
      await page.getByLabel('Per refund (USDC)').fill('5');
      await page.getByLabel('Per 24 hours (USDC)').fill('20');
      await page.getByRole('button', { name: 'Save limits' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/developers?limits=1#refund-limits`);
      await page.getByRole('status').getByText('Refund limits saved.').waitFor();
      await row.getByText('Up to 5.00 USDC a refund, 20.00 USDC in 24 hours').waitFor();
      assert.equal(await page.getByLabel('Per 24 hours (USDC)').inputValue(), '20.00');
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'developers');
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: `Revoke ${AGENT}` }).click();
      await page.waitForURL(`${baseUrl}/dashboard/developers?revoked=1`);
      await page.getByRole('status').getByText('Access revoked').waitFor();
      assert.equal(await page.getByRole('button', { name: `Revoke ${AGENT}` }).count(), 0);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'developers-revoked');
    } finally {
      await context.close();
    }
  });
});
