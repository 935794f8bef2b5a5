// The dashboard in Debian's Chromium, as a merchant lives it: signs in, reads the overview of the
// payments taken on the sandbox chain, sets the payout wallet by clicks and typing (refused with a
// wrong password, accepted with the right one), sees the change on the overview, opens the account.
// axe-core on every page; phone and desktop screenshots under artifacts/dashboard/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { getAddress } from 'viem';
import { createUser } from '../../accounts/users.ts';
import { changeWallet, OPERATOR } from '../../merchants/events.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { newAccount } from '../../testing/payer.ts';
import { forwardingPort } from '../../testing/tcp-proxy.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';

describe('the dashboard in Chromium', { skip: browserSkip }, () => {
  let shop: PayingShop;
  let browser: Browser;
  let forward: Awaited<ReturnType<typeof forwardingPort>>;
  let baseUrl: string;

  before(async () => {
    forward = await forwardingPort();
    baseUrl = `http://127.0.0.1:${forward.port}`;
    [shop, browser] = await Promise.all([startPayingShop('sqlite', { TILL_BASE_URL: baseUrl }, { name: 'Corner Coffee' }), launchChromium()]);
    forward.forwardTo(Number(new URL(shop.baseUrl).port));
    for (const [amount, orderId, concept] of [
      [0.25, 'latte-0001', 'Oat latte'],
      [0.4, 'beans-0002', 'House beans, 250 g'],
      [0.1, 'espresso-0003', undefined],
    ] as const) {
      const { sessionId, payer, offer } = await shop.readyToPay({ amount, currency: 'USD', orderId, ...(concept ? { concept } : {}) });
      const response = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
      assert.equal(response.status, 200, await response.text());
    }
    await createUser(shop.service.context.db, { merchantId: shop.merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await shop?.stop();
    forward?.server.close();
  });

  test('sign in, read the overview, set the payout wallet (refused, then accepted), see the notice, open the account', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const newWallet = getAddress(newAccount().address);
    try {
      await page.goto(`${baseUrl}/dashboard`);
      await page.waitForURL(/\/sign-in\?return_to=%2Fdashboard$/);
      await typeInto(page, 'Email', EMAIL);
      await typeInto(page, 'Password', PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${baseUrl}/dashboard`);

      // The overview: volume, chart, last orders, wallet and webhook state.
      await page.getByRole('heading', { level: 1, name: 'Corner Coffee' }).waitFor();
      assert.match((await page.locator('.stats').textContent()) ?? '', /0\.75 USDC\s*3 payments/);
      await page.getByRole('img', { name: 'Paid volume per day, in USDC' }).waitFor();
      assert.equal(await page.getByRole('row').count(), 4, 'a header row and three orders');
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'overview');
      await page.setViewportSize({ width: 1280, height: 900 });

      // Settings, from the navigation.
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Settings' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/settings`);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'settings');
      await page.setViewportSize({ width: 1280, height: 900 });

      // A wrong password: refused, by field; the address stays typed, the password does not.
      await typeInto(page, 'Wallet address', newWallet.toLowerCase());
      await typeInto(page, 'Last 4 characters', newWallet.slice(-4));
      await typeInto(page, 'Your password', 'not the password at all');
      await page.getByRole('button', { name: 'Change test payout wallet' }).click();
      await page.getByRole('alert').getByText('Your password is not right.').waitFor();
      assert.equal(await page.getByLabel('Wallet address', { exact: true }).inputValue(), newWallet.toLowerCase());
      assert.equal(await page.getByLabel('Your password', { exact: true }).inputValue(), '');
      assert.equal(await page.getByLabel('Your password', { exact: true }).getAttribute('aria-invalid'), 'true');
      assert.equal((await findMerchant(shop.service.context.db, shop.merchantId))?.wallets.sandbox, shop.merchantWallet);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'settings-refused');
      await page.setViewportSize({ width: 1280, height: 900 });

      // The right password: saved, checksummed.
      await typeInto(page, 'Your password', PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(`${baseUrl}/dashboard/settings?saved=wallet`);
      await page.getByRole('status').getByText('Payout wallet saved.').waitFor();
      assert.equal((await findMerchant(shop.service.context.db, shop.merchantId))?.wallets.sandbox, newWallet);
      assert.ok((await page.textContent('main'))?.includes(newWallet));

      // The overview says the wallet changed, and by whom.
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Overview' }).click();
      await page.waitForURL(`${baseUrl}/dashboard`);
      const notice = page.locator('.wallet-notice');
      assert.match((await notice.textContent()) ?? '', new RegExp(`The test payout wallet was changed on .+ by you, to ${newWallet}`));
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'overview-wallet-changed');
      await page.setViewportSize({ width: 1280, height: 900 });

      // The operator removes it (as till live prepare does for the sandbox's demo wallet): the overview says so.
      const { db } = shop.service.context;
      assert.equal(await changeWallet(db, { merchantId: shop.merchantId, actor: OPERATOR, mode: 'sandbox', walletAddress: null }), true);
      await page.reload();
      assert.match((await notice.textContent()) ?? '', /The test payout wallet was removed on .+ by the operator: payments cannot be made until one is set/);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'overview-wallet-removed');
      await page.setViewportSize({ width: 1280, height: 900 });
      assert.equal(await changeWallet(db, { merchantId: shop.merchantId, actor: OPERATOR, mode: 'sandbox', walletAddress: newWallet }), true);

      // The account page.
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Account' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/account`);
      await page.getByRole('heading', { name: 'Change password' }).waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'account');
    } finally {
      await context.close();
    }
  });
});
