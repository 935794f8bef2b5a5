// A merchant's whole journey through the dashboard in Debian's Chromium, on one sandbox: signs in,
// sets the payout wallet, points webhooks at its server, creates an API key and uses it for E1,
// creates a payment link that a buyer pays with the sandbox wallet, finds the order, its receipt,
// the webhook delivery (and redelivers it) and the CSV export, authorizes a coding agent through
// the OAuth flow, and revokes it, after which the agent's next MCP call is refused.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { getAddress } from 'viem';
import { createUser } from '../../accounts/users.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { startSandbox } from '../../sandbox/index.ts';
import { callMcpTool } from '../../testing/agent.ts';
import { browserSkip, launchChromium, payWithSandboxWallet, typeInto } from '../../testing/browser.ts';
import { type DocumentServer, startDocumentServer } from '../../testing/document-server.ts';
import { freePort, sandboxSettings } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { serveAgentDocument } from '../../testing/oauth-flow.ts';
import { newAccount } from '../../testing/payer.ts';
import { waitFor } from '../../testing/wait.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const AGENT = 'Acme Coding Agent';

/** Reloads the page until the locator matches at least `count` elements (the webhook worker delivers in the background). */
async function reloadUntil(page: Page, locator: Locator, count: number): Promise<number> {
  await waitFor(async () => {
    if ((await locator.count()) >= count) return true;
    await page.reload();
    return false;
  }, `${count} of ${locator} on ${page.url()}`);
  return locator.count();
}

describe('a merchant’s journey through the dashboard in Chromium', { skip: browserSkip }, () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  let service: TestService;
  let browser: Browser;
  let site: DocumentServer;
  let baseUrl: string;
  let merchantId: string;
  const received: string[] = [];

  before(async () => {
    // The service's own address is its base URL: dashboard form posts check the Origin against it.
    const port = await freePort();
    [sandbox, browser, site] = await Promise.all([startSandbox({ faultControls: false, blockIntervalMs: 0 }), launchChromium(), startDocumentServer()]);
    service = await startTestService(
      'sqlite',
      { ...sandboxSettings(sandbox), TILL_BASE_URL: `http://127.0.0.1:${port}`, TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' },
      { workers: true },
    );
    baseUrl = await service.app.listen({ port, host: '127.0.0.1' });
    // The merchant's webhook receiver, and the coding agent's callback page.
    site.serve('/till-hooks', (request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        received.push(body);
        response.writeHead(200, { 'content-type': 'text/plain' }).end('ok, received');
      });
    });
    site.serve('/acme/callback', (_request, response) => {
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><html lang="en"><title>Agent</title><h1>Authorization received</h1></html>');
    });
    ({ merchantId } = await service.merchant({ name: 'Corner Coffee', walletAddress: newAccount().address }));
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    await site?.close();
    await sandbox?.stop();
  });

  test('sign in, wallet, webhooks, API key, payment link paid, order, receipt, delivery, CSV, coding agent authorized and revoked', async (t) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const nav = (name: string) => page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true });
    try {
      await t.test('signs in by typing and clicking', async () => {
        await page.goto(`${baseUrl}/dashboard`);
        await page.waitForURL(/\/sign-in\?return_to=%2Fdashboard$/);
        await typeInto(page, 'Email', EMAIL);
        await typeInto(page, 'Password', PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { level: 1, name: 'Corner Coffee' }).waitFor();
      });

      await t.test('sets the payout wallet: refused without the password, accepted with it', async () => {
        const wallet = getAddress(newAccount().address);
        const before = (await findMerchant(service.context.db, merchantId))?.wallets.sandbox;
        await nav('Settings').click();
        await page.waitForURL(`${baseUrl}/dashboard/settings`);
        await typeInto(page, 'Wallet address', wallet.toLowerCase());
        await typeInto(page, 'Last 4 characters', wallet.slice(-4));
        await typeInto(page, 'Your password', 'not the password at all');
        await page.getByRole('button', { name: 'Change test payout wallet' }).click();
        await page.getByRole('alert').getByText('Your password is not right.').waitFor();
        assert.equal((await findMerchant(service.context.db, merchantId))?.wallets.sandbox, before);
        await typeInto(page, 'Your password', PASSWORD);
        await page.getByRole('button', { name: 'Change test payout wallet' }).click();
        await page.waitForURL(`${baseUrl}/dashboard/settings?saved=wallet`);
        await page.getByRole('status').getByText('Payout wallet saved.').waitFor();
        assert.equal((await findMerchant(service.context.db, merchantId))?.wallets.sandbox, wallet);
      });

      await t.test('points webhooks at its server', async () => {
        await nav('Notifications').click();
        await page.getByLabel('URL').fill(`${site.origin}/till-hooks`);
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await page.getByRole('status').getByText('Webhook settings saved').waitFor();
      });

      await t.test('creates an API key and creates a session with it (E1)', async () => {
        await nav('Get paid').click();
        await page.getByRole('button', { name: 'Create an API key' }).click();
        await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
        const apiKey = await page.getByLabel('API key', { exact: true }).inputValue();
        const e1 = await fetch(`${baseUrl}/api/checkout/v2/payment_session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey },
          body: JSON.stringify({ amount: 4.5, currency: 'USD', concept: 'From curl' }),
        });
        assert.equal(e1.status, 201, await e1.text());
      });

      let linkUrl = '';
      let linkSessionId = '';
      await t.test('creates a payment link', async () => {
        await nav('Payment links').click();
        await page.getByRole('heading', { name: 'Payment links', level: 1 }).waitFor();
        await page.getByLabel(/Reusable link/).check();
        await page.getByLabel('Amount', { exact: true }).fill('2.50');
        await page.getByLabel('What is paid for').fill('Flat white');
        await page.getByRole('button', { name: 'Create the link' }).click();
        await page.getByText('Payment link created').waitFor();
        linkUrl = await page.getByLabel('Link URL', { exact: true }).inputValue();
        assert.match(linkUrl, new RegExp(`^${baseUrl}/checkout/pay\\?uid=ps_`));
        linkSessionId = new URL(linkUrl).searchParams.get('uid') ?? '';
      });

      await t.test('a buyer pays the link on the hosted page with the sandbox wallet', async () => {
        await payWithSandboxWallet(browser, linkUrl);
      });

      let orderId = '';
      await t.test('sees the order on Orders, and its receipt', async () => {
        await nav('Orders').click();
        await page.waitForURL(`${baseUrl}/dashboard/orders`);
        const rows = page.locator('table.orders tbody tr');
        assert.equal(await reloadUntil(page, rows, 1), 1);
        assert.match((await rows.first().textContent()) ?? '', /Flat white|2\.5/);
        const order = rows.first().getByRole('link', { name: /^TX-[0-9A-F]{32}$/ });
        orderId = (await order.textContent()) ?? '';
        await order.click();
        await page.waitForURL(`${baseUrl}/checkout/v2/orders/receipt/${orderId}`);
        await page.getByText('Corner Coffee').first().waitFor();
        assert.ok((await page.textContent('body'))?.includes(orderId));
      });

      await t.test('exports the orders as CSV: the order’s row', async () => {
        await page.goto(`${baseUrl}/dashboard/orders`);
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /as CSV$/ }).click()]);
        const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
        assert.match(csv[0]!, /^paid_at,public_order_id,status,/);
        const rows = csv.filter((line) => line.includes(`,${orderId},SUCCESS,`));
        assert.equal(rows.length, 1, csv.join('\n'));
        assert.ok(rows[0]!.includes(`,${linkSessionId},2.5,USD,`), rows[0]);
      });

      await t.test('sees the payment’s webhook delivery on Notifications and redelivers it', async () => {
        await nav('Notifications').click();
        const delivered = page.locator('.delivery', { hasText: 'Delivered' });
        const first = await reloadUntil(page, delivered, 1);
        assert.ok(first >= 1);
        assert.ok(
          received.some((body) => body.includes(orderId)),
          'the receiver got the paid order',
        );
        const eventId = (await delivered.first().locator('.note code').textContent()) ?? '';
        await page.getByRole('button', { name: `Redeliver event ${eventId}` }).click();
        await page.waitForURL(`${baseUrl}/dashboard/notifications?redelivered=1`);
        assert.equal(await reloadUntil(page, delivered, first + 1), first + 1);
        assert.equal(await page.locator('.delivery', { hasText: eventId }).count(), 2);
      });

      const { clientId, redirectUri } = serveAgentDocument(site, 'acme', AGENT);
      const verifier = randomBytes(32).toString('base64url');
      let accessToken = '';
      await t.test('authorizes a coding agent by clicks on the consent screen; the agent exchanges the code', async () => {
        const state = randomBytes(16).toString('base64url');
        const authorize = new URL('/oauth/authorize', baseUrl);
        authorize.search = new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256',
          scope: 'settings:read orders:read',
          state,
        }).toString();
        await page.goto(authorize.href);
        await page.getByRole('heading', { name: `Allow ${AGENT} to use your Till account?` }).waitFor();
        await page.getByRole('button', { name: 'Allow' }).click();
        await page.waitForURL(`${redirectUri}?**`);
        const callback = new URL(page.url());
        assert.equal(callback.searchParams.get('state'), state);
        const exchanged = await fetch(`${baseUrl}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code: callback.searchParams.get('code') ?? '',
            redirect_uri: redirectUri,
            code_verifier: verifier,
            client_id: clientId,
          }),
        });
        assert.equal(exchanged.status, 200);
        accessToken = ((await exchanged.json()) as { access_token: string }).access_token;
      });

      await t.test('the agent calls MCP', async () => {
        const call = await callMcpTool(service.app, accessToken, 'list_orders', {});
        assert.equal(call.status, 200);
        assert.notEqual(call.body.result?.isError, true, JSON.stringify(call.body));
        assert.ok(JSON.stringify(call.body.result).includes(orderId));
      });

      await t.test('revokes the agent on Developers by click; its next MCP call is refused with 401', async () => {
        await page.goto(`${baseUrl}/dashboard`);
        await nav('Developers').click();
        await page.waitForURL(`${baseUrl}/dashboard/developers`);
        await page
          .getByRole('row', { name: new RegExp(AGENT) })
          .first()
          .waitFor();
        await page.getByRole('button', { name: `Revoke ${AGENT}` }).click();
        await page.waitForURL(`${baseUrl}/dashboard/developers?revoked=1`);
        await page.getByRole('status').getByText('Access revoked').waitFor();
        const call = await callMcpTool(service.app, accessToken, 'list_orders', {});
        assert.equal(call.status, 401);
      });
    } finally {
      await context.close();
    }
  });
});
