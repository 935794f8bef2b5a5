// A refund from the Orders page in Debian's Chromium: the merchant narrows Orders to a paid order,
// its payout wallet (the injected test wallet, announced over EIP-6963) signs the refund, and the
// payer gets exactly that back on the sandbox chain. axe-core on the form; phone and desktop
// screenshots under artifacts/dashboard/.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { createPublicClient, erc20Abi, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createUser } from '../../accounts/users.ts';
import { SANDBOX_PAYOUT_KEY_FILE } from '../../merchants/demo-payout-key.ts';
import { startSandbox } from '../../sandbox/index.ts';
import { assertAccessible, browserSkip, contextWithPausedClock, heldApproval, injectTestWallet, launchChromium, screenshots } from '../../testing/browser.ts';
import { freePort, sandboxSettings } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { newAccount } from '../../testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment } from '../../testing/shop.ts';
import { waitFor } from '../../testing/wait.ts';
import { setWebhook } from '../../webhooks/endpoints.ts';
import { startReceiver } from '../../webhooks/fixtures/receiver.ts';
import { sandboxPayoutKeyFor } from './refund-form.ts';

const EMAIL = 'owner@refund-shop.example';
const PASSWORD = 'correct horse battery staple';

describe('a refund from the Orders page in Chromium', { skip: browserSkip }, () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  let service: TestService;
  let browser: Browser;
  let baseUrl: string;
  const payout = newAccount();
  let orderId = '';
  let payer: ReturnType<typeof newAccount>;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  let signingSecret: string;

  before(async () => {
    const port = await freePort();
    sandbox = await startSandbox({ blockIntervalMs: 0 });
    [service, browser] = await Promise.all([
      startTestService('sqlite', { ...sandboxSettings(sandbox), TILL_BASE_URL: `http://127.0.0.1:${port}` }, { workers: true }),
      launchChromium(),
    ]);
    baseUrl = await service.app.listen({ port, host: '127.0.0.1' });
    const { merchantId, apiKey } = await service.merchant({ name: 'Refund Shop', walletAddress: payout.address });
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
    // The merchant's backend, told of refunds.
    hook = await startReceiver();
    ({ signingSecret } = await setWebhook(
      service.context.db,
      service.config.secretKey,
      merchantId,
      { url: hook.url, events: ['payment.succeeded', 'refund.succeeded', 'refund.failed'] },
      'sandbox',
    ));
    const sessionId = await createSession(baseUrl, apiKey, { amount: 2, currency: 'USD', orderId: 'mug-7', concept: 'A mug' });
    payer = await fundedPayer(sandbox, '5');
    const offer = await challenge(baseUrl, sessionId);
    const response = await pay(baseUrl, sessionId, (await signedPayment(payer, sandbox.usdcAddress, offer)).header);
    const answer = (await response.json()) as { paymentId: string };
    assert.equal(response.status, 200, JSON.stringify(answer));
    orderId = answer.paymentId;
  });
  after(async () => {
    await hook?.close();
    await browser?.close();
    await service?.stop();
    await sandbox?.stop();
  });

  test('a wallet without the payout account is told to connect it, and is never asked to sign', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const calls = await injectTestWallet(page, { account: newAccount(), rpcUrl: sandbox.rpcUrl });
      await page.goto(`${baseUrl}/dashboard/orders?q=${orderId}`);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/dashboard\/orders\?q=/);
      await page.getByLabel('Amount (USDC)').fill('0.10');
      // The button is enabled once the page has found the browser's wallet.
      await page.getByText('Signing with Test Wallet.').waitFor();
      await page.getByRole('button', { name: 'Sign with the payout wallet and refund' }).click();
      await page.getByText(`Connect the payout wallet ${payout.address}`).waitFor();
      assert.ok(!calls.some((c) => c.method === 'eth_signTypedData_v4'));
    } finally {
      await context.close();
    }
  });

  test('the payout wallet signs a partial refund on the order; the payer gets exactly that back; Orders says Partially refunded', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // A wallet on another chain that does not know Base yet: it is asked to add it, then to sign.
      const calls = await injectTestWallet(page, { account: payout, rpcUrl: sandbox.rpcUrl, chainId: '0x1', lacksBase: true });
      await page.goto(`${baseUrl}/dashboard/orders`);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(`${baseUrl}/dashboard/orders`);
      await page.getByRole('link', { name: 'Refund' }).click();
      await page.waitForURL(/#refund$/);
      assert.equal(await page.getByLabel('Amount (USDC)').inputValue(), '2.00', 'the rest of the payment by default');
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'refund-form');

      const client = createPublicClient({ transport: http(sandbox.rpcUrl) });
      const balance = () => client.readContract({ address: sandbox.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] });
      const before = await balance();
      await page.getByLabel('Amount (USDC)').fill('0.75');
      await page.getByLabel(/^Reason/).fill('chipped');
      await page.getByRole('button', { name: 'Sign with the payout wallet and refund' }).click();
      await page.waitForURL(/refund=rf_/);
      const added = calls.find((c) => c.method === 'wallet_addEthereumChain')?.params as [{ chainId: string; rpcUrls: string[] }] | undefined;
      assert.equal(added?.[0].chainId, '0x2105', 'Base was added to the wallet');
      assert.equal(added?.[0].rpcUrls[0], `${baseUrl}/sandbox/rpc`, "with the sandbox's RPC");
      const signedAt = calls.findIndex((c) => c.method === 'eth_signTypedData_v4');
      assert.ok(signedAt > calls.findIndex((c) => c.method === 'wallet_addEthereumChain'), 'the wallet was asked to sign, on Base');
      assert.match((await page.getByRole('status').first().textContent()) ?? '', /Refund rf_\S+ (sent|submitted)/);
      assert.equal(await balance(), before + 750_000n, 'the payer got exactly the refund');
      await page.goto(`${baseUrl}/dashboard/orders?q=${orderId}`);
      assert.match((await page.locator('table.orders tbody tr').first().textContent()) ?? '', /Partially refunded/);
      assert.equal(await page.getByLabel('Amount (USDC)').inputValue(), '1.25');
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'refund-partial');

      // The merchant's backend gets the refund, signed; the public receipt shows it once confirmed.
      const delivery = await waitFor(
        () => hook.received.find((r) => JSON.parse(r.body).event === 'refund.succeeded' && JSON.parse(r.body).paymentId === orderId),
        'refund.succeeded',
        60_000,
      );
      new Webhook(signingSecret).verify(delivery.body, delivery.headers as Record<string, string>);
      await page.goto(`${baseUrl}/checkout/v2/orders/receipt/${orderId}`);
      assert.match((await page.locator('body').textContent()) ?? '', /Refunded\s*0\.75 USD \(0\.75 USDC\)/);
      // The receipt says so at the top, not "Paid", and keeps the rest paid in view.
      assert.match((await page.locator('.receipt-total').textContent()) ?? '', /2\.00 USD\s*Partially refunded/);
      assert.match((await page.locator('body').textContent()) ?? '', /Kept by the merchant\s*1\.25 USD/);
      await assertAccessible(page);
      await screenshots(page, 'receipt', 'partially-refunded');
      await page.setViewportSize({ width: 1280, height: 900 });

      // A second refund beyond what is left is refused on the page, and nothing moves.
      await page.goto(`${baseUrl}/dashboard/orders?q=${orderId}`);
      await page.getByText('Signing with Test Wallet.').waitFor();
      const rest = await balance();
      await page.getByLabel('Amount (USDC)').fill('1.26');
      await page.getByRole('button', { name: 'Sign with the payout wallet and refund' }).click();
      // Refused as every dashboard form refuses: an alert, and the amount field marked in red with the reason tied to it.
      const amount = page.getByLabel('Amount (USDC)');
      await page
        .getByRole('alert')
        .getByText(/^Amount /)
        .waitFor();
      assert.equal(await amount.getAttribute('aria-invalid'), 'true');
      const problem = page.locator('#refund-amount-problem');
      assert.match((await problem.textContent()) ?? '', /^Amount .*\.$/);
      assert.ok(((await amount.getAttribute('aria-describedby')) ?? '').split(' ').includes('refund-amount-problem'), 'the reason is tied to the field');
      assert.equal(await problem.evaluate((element) => getComputedStyle(element).color), 'rgb(185, 28, 28)', 'in red, as other forms');
      assert.ok(await amount.evaluate((element) => element === document.activeElement), 'the field to correct has the focus');
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'refund-error');
      await page.setViewportSize({ width: 1280, height: 900 });
      assert.equal(await balance(), rest, 'nothing moved');
    } finally {
      await context.close();
    }
  });

  // The page's clock is paused, so the wallet search's end (400 ms after load) comes exactly when the
  // test says: once after a refusal is on screen, once while a refund waits for the wallet's signature.
  test('the end of the wallet search neither hides a refusal nor re-enables the button while a refund is in flight', async () => {
    const context = await contextWithPausedClock(browser, { width: 1280, height: 900 });
    const page = await context.newPage();
    const { approved, approve } = heldApproval();
    try {
      const calls = await injectTestWallet(page, { account: payout, rpcUrl: sandbox.rpcUrl, signWhen: approved });
      await page.goto(`${baseUrl}/dashboard/orders?q=${orderId}`);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/dashboard\/orders\?q=/);
      const say = page.locator('[data-refund-say]');
      const alert = page.getByRole('alert');
      const button = page.getByRole('button', { name: 'Sign with the payout wallet and refund' });
      await page.getByText('Signing with Test Wallet.').waitFor();

      // More than is left: refused by the service, and the reason stays after the search has ended.
      await page.getByLabel('Amount (USDC)').fill('9.00');
      await button.click();
      await alert.getByText(/more than is left to refund/).waitFor();
      await context.clock.runFor(1_000);
      assert.match((await alert.textContent()) ?? '', /more than is left to refund/, 'the refusal is still what the merchant reads');
      assert.equal(await say.textContent(), '', 'no wallet line over it');
      assert.equal(await button.isEnabled(), true, 'the merchant may correct the amount and try again');
      await screenshots(page, 'dashboard', 'refund-refused');

      // A refund waiting for the wallet's approval: the search ending meanwhile leaves the button disabled.
      await page.getByLabel('Amount (USDC)').fill('0.10');
      await button.click();
      await say.getByText('Sign the refund in your wallet…').waitFor();
      await context.clock.runFor(1_000);
      assert.equal(await say.textContent(), 'Sign the refund in your wallet…');
      assert.equal(await button.isDisabled(), true, 'no second refund can be started while one is in flight');
      approve();
      await page.waitForURL(/refund=rf_/);
      assert.equal(calls.filter((c) => c.method === 'eth_signTypedData_v4').length, 1, 'the wallet was asked to sign once');
    } finally {
      approve();
      await context.close();
    }
  });
  // The README's refund step: in test mode the demo merchant's payout wallet is the sandbox demo one,
  // whose key the data folder holds; the form signs with it in the page, no wallet extension needed.
  test('in test mode, with the sandbox demo payout wallet, the form offers it and refunds with no browser wallet; never in live mode', async () => {
    const demoKey = generatePrivateKey();
    const demoWallet = privateKeyToAccount(demoKey).address;
    writeFileSync(join(service.config.dataDir, SANDBOX_PAYOUT_KEY_FILE), `${demoKey}\n`, { mode: 0o600 });
    const demo = await service.merchant({ name: 'Demo Shop', walletAddress: demoWallet });
    await createUser(service.context.db, { merchantId: demo.merchantId, email: 'demo@demo-shop.example', password: PASSWORD });
    const sessionId = await createSession(baseUrl, demo.apiKey, { amount: 1.5, currency: 'USD', orderId: 'demo-1', concept: 'A postcard' });
    const buyer = await fundedPayer(sandbox, '5');
    const paid = await pay(baseUrl, sessionId, (await signedPayment(buyer, sandbox.usdcAddress, await challenge(baseUrl, sessionId))).header);
    const demoOrder = ((await paid.json()) as { paymentId: string }).paymentId;

    // Another merchant's form in the same sandbox never carries the demo key.
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.goto(`${baseUrl}/dashboard/orders?q=${orderId}`);
    await otherPage.getByLabel('Email').fill(EMAIL);
    await otherPage.getByLabel('Password').fill(PASSWORD);
    await otherPage.keyboard.press('Enter');
    await otherPage.waitForURL(/\/dashboard\/orders\?q=/);
    assert.ok(!(await otherPage.content()).includes(demoKey.slice(2)), 'no demo key on a form whose payout wallet is not the demo one');
    await other.close();
    // Live mode never offers it, whatever the data folder holds.
    assert.equal(sandboxPayoutKeyFor(service.config.dataDir, 'live', demoWallet), undefined);
    assert.equal(sandboxPayoutKeyFor(service.config.dataDir, 'sandbox', demoWallet), demoKey);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // No wallet injected: the browser has no extension at all.
      await page.goto(`${baseUrl}/dashboard/orders?q=${demoOrder}`);
      await page.getByLabel('Email').fill('demo@demo-shop.example');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/dashboard\/orders\?q=/);
      await page.getByText('Signing with Sandbox demo payout wallet (test USDC, no extension).').waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'refund-form-sandbox-wallet');
      await page.setViewportSize({ width: 1280, height: 900 });

      const client = createPublicClient({ transport: http(sandbox.rpcUrl) });
      const balance = () => client.readContract({ address: sandbox.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [buyer.address] });
      const before = await balance();
      await page.getByLabel('Amount (USDC)').fill('0.50');
      await page.getByRole('button', { name: 'Sign with the payout wallet and refund' }).click();
      await page.waitForURL(/refund=rf_/);
      assert.equal(await balance(), before + 500_000n, 'the buyer got the refund from the demo payout wallet');
      assert.match((await page.locator('table.orders tbody tr').first().textContent()) ?? '', /Partially refunded/);
    } finally {
      await context.close();
    }
  });
});
