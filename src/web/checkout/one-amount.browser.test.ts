// The hosted payment page always shows one amount, in Debian's Chromium on the sandbox chain: when the
// merchant changes the session's amount (E2) while the page is open, the heading, the USDC figure and
// the Pay button change together; what the buyer then pays, and what the receipt says, is that amount.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Address } from 'viem';
import { formatUsdc } from '../../money/usdc.ts';
import { assertAccessible, browserSkip, contextWithPausedClock, launchChromium } from '../../testing/browser.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { sessionRequest } from '../../testing/shop.ts';
import { checkoutScreenshots, openCheckout, outcome, payButton } from './fixtures/checkout-page.ts';

/** What the page shows of the amount: the heading, the USDC of the summary, and the Pay button. */
async function shown(page: Page) {
  return {
    heading: ((await page.getByRole('heading', { level: 1 }).textContent()) ?? '').trim(),
    usdc: ((await page.locator('#usdc-text').textContent()) ?? '').trim(),
    button: ((await payButton(page).textContent()) ?? '').trim(),
  };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`the hosted page shows one amount when the merchant changes it, on ${engine}`, skip, () => {
    let shop: PayingShop;
    let browser: Browser | undefined;
    before(async () => {
      [shop, browser] = await Promise.all([
        startPayingShop(engine, {}, { name: 'Hilltop Bakery' }),
        browserSkip ? Promise.resolve(undefined) : launchChromium(),
      ]);
    });
    after(async () => {
      await browser?.close();
      await shop?.stop();
    });

    const merchantBalance = () => shop.sandbox.balanceOf(shop.merchantWallet as Address);
    /** E2, as the merchant's server sends it. */
    async function changeAmount(sessionId: string, amount: number) {
      const response = await sessionRequest(shop.baseUrl, shop.apiKey, 'PUT', { sessionId, amount });
      assert.equal(response.status, 200, await response.text());
    }
    async function receiptOf(paymentId: string) {
      const response = await fetch(`${shop.baseUrl}/checkout/v2/orders/receipt/${paymentId}`);
      return (await response.json()) as { amount: number; currency: string; tokenAmount: string };
    }

    test('an amount changed while the page is open shows at once in the heading, the quote and the Pay button; the buyer pays it and the receipt agrees', {
      skip: browserSkip,
    }, async () => {
      const sessionId = await shop.createSession({ amount: 2, currency: 'USD', orderId: `cake-${engine}`, concept: 'Lemon cake' });
      const { page, context, proofs } = await openCheckout(browser!, shop.baseUrl, sessionId);
      try {
        await payButton(page).waitFor();
        assert.deepEqual(await shown(page), { heading: 'Pay 2.00 USD', usdc: '2.00', button: 'Pay with Sandbox wallet (test USDC, no extension)2.00 USDC' });

        await changeAmount(sessionId, 3);
        const quoteOf3 = await shop.challenge(sessionId);
        const usdcOf3 = formatUsdc(quoteOf3.value);
        // No click, no reload: the open page re-asks on its own.
        await page.getByRole('heading', { name: 'Pay 3.00 USD' }).waitFor({ timeout: 15_000 });
        assert.deepEqual(await shown(page), {
          heading: 'Pay 3.00 USD',
          usdc: usdcOf3,
          button: `Pay with Sandbox wallet (test USDC, no extension)${usdcOf3} USDC`,
        });
        assert.ok(!((await page.locator('main').textContent()) ?? '').includes('2.00'), 'the old amount is nowhere on the page');
        assert.equal(await page.locator('#status').textContent(), 'The shop changed the amount of this payment to 3.00 USD.', 'said, for screen readers too');
        await assertAccessible(page);
        await checkoutScreenshots(page, `amount-changed-by-merchant-${engine}`);

        const before = await merchantBalance();
        await payButton(page).click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
        await page.getByRole('heading', { name: 'Paid 3.00 USD' }).waitFor();
        assert.equal(proofs.length >= 1, true);
        assert.equal((await merchantBalance()) - before, quoteOf3.value, 'the merchant received the quote of 3.00 USD');
        const href = (await outcome(page).getByRole('link', { name: 'View the receipt' }).getAttribute('href')) ?? '';
        const receipt = await receiptOf(href.split('/').pop()!);
        assert.deepEqual([receipt.amount, receipt.currency, receipt.tokenAmount], [3, 'USD', usdcOf3], 'the receipt says what the page showed');
      } finally {
        await context.close();
      }
    });

    test("an amount changed between the page's last look and the click on Pay is shown, and nothing is signed until the buyer clicks again", {
      skip: browserSkip,
    }, async () => {
      const sessionId = await shop.createSession({ amount: 2, currency: 'USD', orderId: `pie-${engine}`, concept: 'Apple pie' });
      // The page's clock stands still: it never re-asks on its own, so only the click finds the change.
      const context = await contextWithPausedClock(browser!, { width: 1280, height: 800 });
      const page = await context.newPage();
      const proofs: string[] = [];
      page.on('request', (request) => {
        if (request.headers()['x-payment']) proofs.push(request.url());
      });
      try {
        await page.goto(`${shop.baseUrl}/checkout/pay?uid=${sessionId}`);
        await payButton(page).waitFor();
        await changeAmount(sessionId, 4);
        const quoteOf4 = await shop.challenge(sessionId);
        await payButton(page).click();
        await page.getByText(`The shop changed the amount of this payment to 4.00 USD (${formatUsdc(quoteOf4.value)} USDC)`).waitFor();
        assert.deepEqual(proofs, [], 'nothing was signed for an amount the buyer had not seen');
        assert.equal((await shown(page)).heading, 'Pay 4.00 USD');
        assert.equal((await shown(page)).usdc, formatUsdc(quoteOf4.value));

        const before = await merchantBalance();
        await payButton(page).click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
        assert.equal((await merchantBalance()) - before, quoteOf4.value, 'the second click paid the amount on screen');
      } finally {
        await context.close();
      }
    });
  });
}
