// A buyer-chosen amount on the hosted payment page, in Debian's Chromium on the sandbox chain: what
// moves on chain is always the quote of the amount on screen. Pay is disabled while the field holds
// an amount that is not the one quoted (being quoted, under the floor, malformed), and the x402
// endpoint refuses a proof signed for the quote of another amount than its ?amount=.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page, Route } from 'playwright-core';
import type { Address } from 'viem';
import { formatUsdc } from '../../money/usdc.ts';
import { assertAccessible, browserSkip, launchChromium } from '../../testing/browser.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { waitFor } from '../../testing/wait.ts';
import { checkoutScreenshots, openCheckout, outcome, payButton } from './fixtures/checkout-page.ts';

/**
 * Types `text` into the amount field and clicks Pay in one task of the page, so no timer and no
 * answer of the page can run in between: the quickest buyer there can be, with no timing luck.
 * Returns whether Pay could be clicked (a disabled button ignores the click).
 */
function typeAndClickPay(page: Page, text: string): Promise<boolean> {
  return page.evaluate((value) => {
    const input = document.getElementById('amount') as HTMLInputElement;
    input.focus();
    input.value = value;
    input.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: value }));
    const pay = document.querySelector<HTMLButtonElement>('#wallets button');
    if (!pay) throw new Error('the page shows no Pay button');
    const enabled = !pay.disabled;
    pay.click();
    return enabled;
  }, text);
}

for (const { engine, skip } of engines) {
  describeOnEngine(`the hosted page pays the quote of the amount on screen, on ${engine}`, skip, () => {
    let shop: PayingShop;
    let browser: Browser | undefined;
    before(async () => {
      [shop, browser] = await Promise.all([
        startPayingShop(engine, {}, { name: 'Riverside Food Bank' }),
        browserSkip ? Promise.resolve(undefined) : launchChromium(),
      ]);
    });
    after(async () => {
      await browser?.close();
      await shop?.stop();
    });

    const donation = () => shop.createSession({ amount: 5, currency: 'USD', editable: true, minAmount: 2, concept: 'Donation' });
    const merchantBalance = () => shop.sandbox.balanceOf(shop.merchantWallet as Address);
    const amountField = (page: Page) => page.getByLabel('Amount to pay (USD)');

    test('Pay clicked the instant a new amount is typed pays the quote of that amount, never the previous quote', { skip: browserSkip }, async () => {
      const sessionId = await donation();
      const quoteOf5 = await shop.challenge(sessionId, '?amount=5');
      const quoteOf3 = await shop.challenge(sessionId, '?amount=3');
      assert.notEqual(quoteOf3.value, quoteOf5.value);
      const before = await merchantBalance();
      const { page, context, proofs } = await openCheckout(browser!, shop.baseUrl, sessionId);
      try {
        await page.locator('#usdc-text', { hasText: formatUsdc(quoteOf5.value) }).waitFor();
        await payButton(page).waitFor();
        assert.ok(await payButton(page).isEnabled());
        const clickedAtOnce = await typeAndClickPay(page, '3');
        // Pay may only be clicked once 3 is quoted; Playwright's click waits for that.
        if (!clickedAtOnce) await payButton(page).click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });

        assert.equal(await amountField(page).inputValue(), '3');
        assert.equal((await merchantBalance()) - before, quoteOf3.value, 'the merchant received the quote of the amount on screen (3 USD)');
        assert.equal(await page.locator('#amount-text').textContent(), '3.00 USD');
        assert.equal(await page.locator('#usdc-text').textContent(), formatUsdc(quoteOf3.value));
        assert.deepEqual(
          proofs.map((p) => new URL(p.url).searchParams.get('amount')),
          ['3.00'],
          'one proof, sent with the amount on screen',
        );
        assert.equal(clickedAtOnce, false, 'Pay is disabled until the amount typed is quoted');
      } finally {
        await context.close();
      }
    });

    test('an amount under the floor, or malformed, leaves Pay disabled and pays nothing', { skip: browserSkip }, async () => {
      const sessionId = await donation();
      const before = await merchantBalance();
      const { page, context, proofs } = await openCheckout(browser!, shop.baseUrl, sessionId);
      try {
        await payButton(page).waitFor();
        assert.ok(await payButton(page).isEnabled());
        for (const [text, problem] of [
          ['1', 'The amount must be at least 2.00 USD.'],
          ['1.99', 'The amount must be at least 2.00 USD.'],
          ['2.001', 'Use at most 2 decimals.'],
          ['abc', 'Enter an amount such as 25 or 25.50.'],
          ['2..5', 'Enter an amount such as 25 or 25.50.'],
          ['0', 'Enter an amount above zero.'],
          ['', 'Enter an amount such as 25 or 25.50.'],
        ]) {
          assert.equal(await typeAndClickPay(page, text!), false, `Pay could be clicked with "${text}" in the field`);
          await page.locator('#amount-help', { hasText: problem! }).waitFor();
          assert.equal(await amountField(page).getAttribute('aria-invalid'), 'true', text);
          assert.ok(await payButton(page).isDisabled(), text);
        }
        await typeAndClickPay(page, '1');
        await checkoutScreenshots(page, 'amount-below-floor');
        await assertAccessible(page);

        // The next amount the buyer types is the one paid, and the only one: nothing went out before it.
        const quoteOf250 = await shop.challenge(sessionId, '?amount=2.50');
        await amountField(page).fill('2.5');
        await payButton(page).click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
        assert.equal((await merchantBalance()) - before, quoteOf250.value);
        assert.deepEqual(
          proofs.map((p) => new URL(p.url).searchParams.get('amount')),
          ['2.50'],
        );
      } finally {
        await context.close();
      }
    });

    test('while a new amount is being quoted Pay stays disabled, and a late answer for an earlier amount never replaces the quote on screen', {
      skip: browserSkip,
    }, async () => {
      const sessionId = await donation();
      const quoteOf6 = await shop.challenge(sessionId, '?amount=6');
      const before = await merchantBalance();
      const { page, context } = await openCheckout(browser!, shop.baseUrl, sessionId);
      // The URL of each answer whose body the page has read: once read, what the page does with it runs before the test's next look.
      await page.evaluate(() => {
        const json = Response.prototype.json;
        const read: string[] = [];
        Object.assign(window, { readAnswers: read });
        Response.prototype.json = function (this: Response) {
          return json.call(this).finally(() => read.push(this.url));
        };
      });
      const readAnswerOf = (amount: number) =>
        page.evaluate(
          (wanted) => (window as unknown as { readAnswers: string[] }).readAnswers.some((url) => Number(new URL(url).searchParams.get('amount')) === wanted),
          amount,
        );
      // The page's first request for the quote of 4 and of 6 is held here until the test lets it go.
      const held = new Map<string, { route?: Route; arrived: () => void; seen: Promise<void> }>();
      const slot = (amount: string) => {
        if (!held.has(amount)) {
          let arrived = () => {};
          const seen = new Promise<void>((resolve) => {
            arrived = resolve;
          });
          held.set(amount, { arrived, seen });
        }
        return held.get(amount)!;
      };
      await page.route(
        (url) => url.pathname === `/x402/session/${sessionId}`,
        (route) => {
          const amount = Number(new URL(route.request().url()).searchParams.get('amount'));
          const entry = slot(String(amount));
          if (route.request().headers()['x-payment'] || (amount !== 4 && amount !== 6) || entry.route) return route.continue();
          entry.route = route;
          entry.arrived();
        },
      );
      try {
        await payButton(page).waitFor();
        await amountField(page).fill('4');
        await slot('4').seen;
        assert.ok(await payButton(page).isDisabled(), 'Pay is disabled while 4 is being quoted');
        await page.getByText('Getting the price of 4.00 USD…').waitFor();
        await checkoutScreenshots(page, 'amount-being-quoted');
        await assertAccessible(page);

        await amountField(page).fill('6');
        await slot('6').seen;
        await slot('6').route!.continue();
        await page.locator('#usdc-text', { hasText: formatUsdc(quoteOf6.value) }).waitFor();
        assert.ok(await payButton(page).isEnabled());
        await checkoutScreenshots(page, 'amount-quoted');

        // The answer for 4 comes last: the page has it, and still shows (and pays) the quote of 6.
        const late = slot('4').route!.request();
        await slot('4').route!.continue();
        await (await late.response())?.finished();
        await waitFor(() => readAnswerOf(4), 'the page to read the late answer for 4', 10_000);
        assert.equal(await page.locator('#usdc-text').textContent(), formatUsdc(quoteOf6.value));
        assert.equal(await page.locator('#amount-text').textContent(), '6.00 USD');
        await payButton(page).click();
        await outcome(page).getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
        assert.equal((await merchantBalance()) - before, quoteOf6.value);
      } finally {
        await context.close();
      }
    });

    test('the endpoint refuses a proof signed for the quote of one amount sent with another ?amount=: 402 amount_mismatch, nothing moves on chain', async () => {
      const sessionId = await donation();
      const quoteOf5 = await shop.challenge(sessionId, '?amount=5');
      const quoteOf3 = await shop.challenge(sessionId, '?amount=3');
      const payer = await shop.fundedPayer('20');
      const signedFor5 = await shop.signedPayment(payer, quoteOf5);
      const signedFor3 = await shop.signedPayment(payer, quoteOf3);
      const before = { merchant: await merchantBalance(), payer: await shop.sandbox.balanceOf(payer.address), stats: (await shop.sandbox.faults.get()).stats };

      for (const [proof, query] of [
        [signedFor5, '?amount=3'],
        [signedFor5, '?amount=3.00'],
        [signedFor5, '?amount=7'],
        [signedFor3, '?amount=5'],
      ] as const) {
        const response = await shop.pay(sessionId, proof.header, query);
        assert.equal(response.status, 402, query);
        const body = (await response.json()) as { error: string };
        assert.equal(body.error, 'amount_mismatch', query);
      }
      const stats = (await shop.sandbox.faults.get()).stats;
      assert.equal(stats.verifyRequests, before.stats.verifyRequests, 'refused before the facilitator is asked');
      assert.equal(stats.settleRequests, before.stats.settleRequests, 'nothing was submitted');
      assert.equal(await merchantBalance(), before.merchant, 'no transfer to the merchant on chain');
      assert.equal(await shop.sandbox.balanceOf(payer.address), before.payer, 'no transfer from the payer on chain');

      // The same proof with the amount it was signed for is good: the refusals were about the amount alone.
      const paid = await shop.pay(sessionId, signedFor5.header, '?amount=5');
      assert.equal(paid.status, 200);
      assert.equal((await merchantBalance()) - before.merchant, quoteOf5.value);
    });
  });
}
