// The hosted page's wallet list while a payment is under way, in Debian's Chromium on the sandbox
// chain: what the wallet search finds meanwhile (a wallet announcing itself late, the search's end
// 400 ms after load) waits for the payment's end; the buttons and the status line stay the payment's.
// The page's clock is paused, so the search ends exactly when the test says.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, contextWithPausedClock, heldApproval, injectTestWallet, launchChromium } from '../../testing/browser.ts';
import { type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { checkoutScreenshots, outcome } from './fixtures/checkout-page.ts';

let shop: PayingShop;
let browser: Browser | undefined;
before(async () => {
  [shop, browser] = await Promise.all([
    startPayingShop('sqlite', {}, { name: 'Late Wallet Shop' }),
    browserSkip ? Promise.resolve(undefined) : launchChromium(),
  ]);
});
after(async () => {
  await browser?.close();
  await shop?.stop();
});

test('a wallet found while a payment waits for approval changes neither the buttons nor the status line until the payment ends', {
  skip: browserSkip,
}, async () => {
  const sessionId = await shop.createSession({ amount: 0.25, currency: 'USD', concept: 'A sticker' });
  const payer = await shop.fundedPayer('1');
  const context = await contextWithPausedClock(browser!, { width: 1280, height: 800 });
  const page = await context.newPage();
  const { approved, approve } = heldApproval();
  try {
    await injectTestWallet(page, { account: payer, rpcUrl: shop.sandbox.rpcUrl, signWhen: approved });
    await page.goto(`${shop.baseUrl}/checkout/pay?uid=${encodeURIComponent(sessionId)}`);
    const buttons = page.locator('#wallets button');
    const status = page.locator('#status');
    await page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
    await status.getByText('Approve the payment in your wallet…').waitFor();
    const during = await buttons.allTextContents();
    // The very button element the buyer clicked, marked to tell it from a re-drawn one.
    await buttons.first().evaluate((button) => Object.assign(button, { clicked: true }));

    // A second wallet announces itself, and the search's fallback runs out, while the buyer approves.
    await page.evaluate(() => {
      const provider = { request: async () => null };
      const info = { uuid: '6f1c2c7e-0000-4000-8000-000000000002', name: 'Late Wallet', icon: '', rdns: 'late.wallet' };
      window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail: Object.freeze({ info, provider }) }));
    });
    await context.clock.runFor(1_000);
    assert.deepEqual(await buttons.allTextContents(), during, 'the wallet buttons are the payment’s until it ends');
    assert.equal(await buttons.first().evaluate((button) => 'clicked' in button), true, 'not even re-drawn');
    assert.equal(await buttons.first().isDisabled(), true);
    assert.equal(await status.textContent(), 'Approve the payment in your wallet…');
    await checkoutScreenshots(page, 'approving-in-wallet');

    approve();
    await context.clock.resume();
    await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
  } finally {
    approve();
    await context.close();
  }
});
