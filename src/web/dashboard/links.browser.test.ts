// The Get paid and Payment links pages in Debian's Chromium, as a merchant lives them: sign in,
// create an API key by clicking and use it for E1, create a payment link by filling its form, pay it
// on the hosted page with the sandbox wallet, and see the payment under the link. axe-core on every
// page, phone and desktop screenshots of each.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { getAddress } from 'viem';
import { createUser } from '../../accounts/users.ts';
import { startSandbox } from '../../sandbox/index.ts';
import { assertAccessible, browserSkip, launchChromium, payWithSandboxWallet, screenshots } from '../../testing/browser.ts';
import { freePort, sandboxSettings } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { authorization, newAccount, signAuthorization, xPaymentHeader } from '../../testing/payer.ts';
import { challenge, pay, signedPayment } from '../../testing/shop.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';

describe('the Get paid and Payment links pages in Chromium', { skip: browserSkip }, () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  let service: TestService;
  let browser: Browser;
  const shop = { baseUrl: '' };

  // The service's base URL is the one the browser uses: the dashboard's form posts check their Origin against it.
  before(async () => {
    const port = await freePort();
    shop.baseUrl = `http://127.0.0.1:${port}`;
    [sandbox, browser] = await Promise.all([startSandbox({ faultControls: false, blockIntervalMs: 0 }), launchChromium()]);
    service = await startTestService('sqlite', { ...sandboxSettings(sandbox), TILL_BASE_URL: shop.baseUrl });
    await service.app.listen({ port, host: '127.0.0.1' });
    const { merchantId } = await service.merchant({ name: 'Corner Coffee', walletAddress: newAccount().address });
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    await sandbox?.stop();
  });

  test('an API key made by clicking creates a session; a link made by filling the form is paid with the sandbox wallet and shows its payment', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: shop.baseUrl });
    const page = await context.newPage();
    try {
      await page.goto(`${shop.baseUrl}/dashboard/get-paid`);
      await page.waitForURL(/\/sign-in\?return_to=%2Fdashboard%2Fget-paid/);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Get paid', level: 1 }).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'get-paid');

      // A key, by clicking: shown once, selected for copying, and in the curl command.
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: 'Create an API key' }).click();
      await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
      const apiKey = await page.getByLabel('API key', { exact: true }).inputValue();
      assert.match(apiKey, /^sk_test_[\w-]{43}$/);
      assert.ok((await page.locator('#curl-snippet').textContent())?.includes(apiKey));
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), apiKey);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'get-paid-new-key');
      const e1 = await fetch(`${shop.baseUrl}/api/checkout/v2/payment_session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey },
        body: JSON.stringify({ amount: 4.5, currency: 'USD', concept: 'From curl' }),
      });
      assert.equal(e1.status, 201);

      // A client, by clicking: its secret shown once.
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: 'Create a client' }).click();
      await page.getByRole('heading', { name: 'Your new client' }).waitFor();
      assert.match(await page.getByLabel('Client secret', { exact: true }).inputValue(), /^cs_/);
      await assertAccessible(page);

      // A payment link, by filling the form.
      await page.getByRole('link', { name: 'Payment links' }).click();
      await page.getByRole('heading', { name: 'Payment links', level: 1 }).waitFor();
      await page.getByLabel(/Reusable link/).check();
      await page.getByLabel('Amount', { exact: true }).fill('2.50');
      await page.getByLabel('What is paid for').fill('Flat white');
      await page.getByRole('button', { name: 'Create the link' }).click();
      await page.getByRole('heading', { name: 'Flat white', level: 1 }).waitFor();
      await page.getByText('Payment link created').waitFor();
      const url = await page.getByLabel('Link URL', { exact: true }).inputValue();
      assert.match(url, new RegExp(`^${shop.baseUrl}/checkout/pay\\?uid=ps_`));
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'link');

      // The buyer pays it on the hosted page with the sandbox wallet.
      await payWithSandboxWallet(browser, url);

      // The payment under the link, with its order id and receipt.
      await page.goto(`${shop.baseUrl}${new URL(page.url()).pathname}`);
      const order = page.getByRole('link', { name: /^TX-[0-9A-F]{32}$/ });
      await order.waitFor();
      const paymentsText = (await page.locator('section[aria-labelledby="payments-heading"]').textContent()) ?? '';
      assert.match(paymentsText, /Paid/, 'the status in the words of Orders');
      assert.doesNotMatch(paymentsText, /SUCCESS/);
      // The payer's address checksummed (EIP-55), as wallets show it.
      const payer = /0x[0-9a-fA-F]{40}/.exec(paymentsText)?.[0] ?? '';
      assert.equal(payer, getAddress(payer), `the payer ${payer} is shown checksummed`);
      assert.notEqual(payer, payer.toLowerCase());
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'link-paid');

      // Refused proofs, an unfunded payer's twice and a wrong amount, under "Refused attempts".
      const linkId = new URL(url).searchParams.get('uid') ?? '';
      const offer = await challenge(shop.baseUrl, linkId);
      const unfunded = newAccount();
      for (const [payer, value] of [
        [unfunded, offer.value],
        [unfunded, offer.value],
        [newAccount(), offer.value - 1n],
      ] as const) {
        const { header } = await signedPayment(payer, sandbox.usdcAddress, { payTo: offer.payTo, value });
        assert.equal((await pay(shop.baseUrl, linkId, header)).status, 402);
      }
      // A stranger's proof naming a payer who never signed it: counted apart, never a row with that payer.
      const victim = newAccount();
      const named = authorization(victim.address, offer.payTo, offer.value);
      const forged = await signAuthorization(newAccount(), sandbox.usdcAddress, named);
      assert.equal((await pay(shop.baseUrl, linkId, xPaymentHeader(forged, named))).status, 402);
      await page.reload();
      await page.getByRole('heading', { name: 'Refused attempts' }).waitFor();
      assert.equal(await page.locator('section[aria-labelledby="attempts-heading"] tbody tr').count(), 2);
      assert.doesNotMatch((await page.locator('section[aria-labelledby="attempts-heading"]').textContent()) ?? '', new RegExp(victim.address, 'i'));
      await page.getByText(/^Not listed: 1 refused payment/).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'link-attempts');

      await page.getByRole('link', { name: '← All payment links' }).click();
      await page.getByRole('link', { name: 'Flat white' }).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'links');

      // A refused form names its field.
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByLabel('Amount', { exact: true }).fill('1.234');
      await page.getByRole('button', { name: 'Create the link' }).click();
      await page
        .getByRole('alert')
        .getByText(/^Amount: amount/)
        .waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'links-refused');
    } finally {
      await context.close();
    }
  });
});
