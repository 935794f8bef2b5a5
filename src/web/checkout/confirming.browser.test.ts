// A payment whose outcome is not known yet, on the hosted page in Debian's Chromium on the sandbox
// chain: the page says it is confirming the payment, resends the very same proof after each
// Retry-After, never offers to pay again meanwhile, and ends paid or failed as the chain says.
// The sandbox facilitator answers "pending" after settling, refuses without settling, or its
// answer is lost on the way to the browser; the reconciler is run by the test, when it chooses.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Locator, Page, Route } from 'playwright-core';
import type { Address } from 'viem';
import type { Facilitator } from '../../chain/facilitator.ts';
import { createChainReader } from '../../chain/reader.ts';
import { startReconciler } from '../../chain/reconciler.ts';
import { BASE } from '../../common/network.ts';
import { assertAccessible, browserSkip, launchChromium } from '../../testing/browser.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { X402_ERRORS } from '../../x402/protocol.ts';
import { X402_SENTENCES } from './browser/messages.ts';
import { checkoutScreenshots, type OpenedCheckout, openCheckout, outcome, payButton } from './fixtures/checkout-page.ts';

const SHOP = 'https://shop.example';
const CONFIRMING = 'Confirming your payment on the network…';
/** The sandbox settles in well under a second: a payment left PENDING is the reconciler's after 5 s, not 45. */
const SETTLE_TIMES = { TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '5000', TILL_RECONCILE_GRACE_MS: '5000' };

/** How the page's proofs reach the service: the answer shape, and the one proof held back or whose answer is lost. */
type Gate = {
  /** Answer a 402 that asks to come back (Retry-After) as the endpoint will: payment_in_progress, no offer, no PAYMENT-REQUIRED. */
  withoutOffer?: boolean;
  /** The proof (1-based) held until `release()`. */
  hold?: number;
  /** The proof (1-based) that reaches the service, whose answer is then lost (the connection is reset). */
  loseAnswerOf?: number;
};

/** Routes the page's proofs through `gate`; `held` resolves once the held proof is sent. */
async function gateProofs(page: Page, sessionId: string, gate: Gate) {
  let count = 0;
  let heldRoute: Route | undefined;
  let arrived = () => {};
  const held = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const forward = async (route: Route, lose: boolean) => {
    const response = await route.fetch();
    if (lose) return route.abort('connectionreset');
    const headers = response.headers();
    if (gate.withoutOffer && response.status() === 402 && headers['retry-after']) {
      const { 'payment-required': _offer, ...rest } = headers;
      return route.fulfill({
        status: 402,
        headers: { ...rest, 'retry-after': '5' },
        body: JSON.stringify({ x402Version: 2, error: 'payment_in_progress', message: X402_ERRORS.payment_in_progress, accepts: [] }),
      });
    }
    return route.fulfill({ response });
  };
  await page.route(
    (url) => url.pathname === `/x402/session/${sessionId}`,
    async (route) => {
      if (!route.request().headers()['x-payment']) return route.continue();
      count += 1;
      if (count === gate.hold) {
        heldRoute = route;
        arrived();
        return;
      }
      await forward(route, count === gate.loseAnswerOf);
    },
  );
  return {
    held: Promise.race([
      held,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the page sent no proof #${gate.hold} within 30 s`)), 30_000).unref()),
    ]),
    /** Lets the held proof go on to the service, without waiting for its answer (which may wait for the reconciler). */
    release: () => {
      forward(heldRoute!, false).catch(() => {});
    },
  };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`the hosted page while a payment is being confirmed, on ${engine}`, skip || browserSkip, () => {
    let shop: PayingShop;
    let browser: Browser;
    let reconcile: () => Promise<void>;
    before(async () => {
      [shop, browser] = await Promise.all([startPayingShop(engine, SETTLE_TIMES, { name: 'Corner Coffee' }), launchChromium()]);
      // The reconciler runs when the test says so, and only reads the chain (no re-submission here).
      const unused = () => Promise.reject(new Error('this reconciler only reads the chain'));
      const facilitator: Facilitator = { verify: unused, settle: unused, supported: unused };
      const reconciler = startReconciler(shop.service.context, {
        mode: 'sandbox',
        network: BASE,
        walletRpcUrl: shop.sandbox.rpcUrl,
        usdcAddress: shop.sandbox.usdcAddress,
        explorerTxUrl: shop.service.config.explorerTxUrl,
        chain: createChainReader(shop.sandbox.rpcUrl),
        facilitator,
        intervalMs: 200,
        graceMs: 0,
        confirmations: 0n,
      });
      await reconciler.stop();
      reconcile = reconciler.runOnce;
    });
    after(async () => {
      await browser?.close();
      await shop?.stop();
    });

    let orders = 2000;
    const order = () =>
      shop.createSession({
        amount: 4.5,
        currency: 'USD',
        concept: 'Flat white and a croissant',
        orderId: `B-${++orders}`,
        cancelUrl: `${SHOP}/cart`,
        failUrl: `${SHOP}/failed`,
      });
    const merchantBalance = () => shop.sandbox.balanceOf(shop.merchantWallet as Address);

    /** Runs the reconciler until the page shows `shown`. */
    async function reconcileUntil(shown: Locator) {
      const deadline = Date.now() + 60_000;
      while (!(await shown.isVisible())) {
        assert.ok(Date.now() < deadline, `the page never showed ${shown}`);
        await reconcile();
        await shown.page().waitForTimeout(250);
      }
    }

    /** What the buyer sees while the held proof waits: confirming, and no way to pay again. */
    async function assertConfirming({ page }: OpenedCheckout) {
      const box = outcome(page);
      assert.ok(await box.getByText(CONFIRMING).isVisible());
      assert.ok(await box.getByText('The network is still confirming it. Keep this page open; there is no need to pay again.').isVisible());
      assert.equal(await page.getByRole('button', { name: 'Try again' }).count(), 0);
      assert.equal(await page.getByRole('button', { name: /Pay with/ }).count(), 0);
      assert.equal(await page.getByRole('link', { name: /Return to the merchant/ }).count(), 0);
      assert.ok(await page.getByRole('link', { name: 'Cancel and return to the merchant' }).isHidden());
    }

    /** Every proof the page sent is the first one, to the same URL: the same payment asked about again. */
    function assertSameProof({ proofs }: OpenedCheckout, atLeast: number) {
      assert.ok(proofs.length >= atLeast, `${proofs.length} proofs sent`);
      for (const proof of proofs.slice(1)) {
        assert.equal(proof.header, proofs[0]!.header);
        assert.equal(proof.url, proofs[0]!.url);
      }
    }

    for (const withoutOffer of [false, true]) {
      test(`a settlement answered "pending" is confirmed, then paid once the chain shows it (${withoutOffer ? 'answers without an offer' : 'answers as the endpoint gives them'})`, async () => {
        const sessionId = await order();
        const { value } = await shop.challenge(sessionId);
        const before = await merchantBalance();
        await shop.sandbox.faults.set({ settleFault: 'pending' });
        const opened = await openCheckout(browser, shop.baseUrl, sessionId);
        const { page, context, proofs } = opened;
        try {
          const second = await gateProofs(page, sessionId, { withoutOffer, hold: 2 });
          await payButton(page).click();
          await outcome(page).getByText(CONFIRMING).waitFor();
          await second.held;
          assert.ok(proofs[1]!.at - proofs[0]!.at >= 4_500, 'the proof is sent again after Retry-After (5 s)');
          await assertConfirming(opened);
          assertSameProof(opened, 2);
          assert.equal((await merchantBalance()) - before, value, 'the transfer is on chain, and the page says it is being confirmed');
          if (!withoutOffer) {
            await checkoutScreenshots(page, 'confirming');
            await assertAccessible(page);
          }

          second.release();
          await reconcileUntil(outcome(page).getByText('Paid. Thank you!'));
          assert.ok(await page.getByRole('link', { name: 'View the receipt' }).isVisible());
          assert.equal((await merchantBalance()) - before, value, 'paid once');
          assertSameProof(opened, 2);
        } finally {
          await shop.sandbox.faults.set({ settleFault: 'none' });
          await context.close();
        }
      });
    }

    test('an answer lost on the way to the browser is asked for again with the same proof: paid, never "Try again"', async () => {
      const sessionId = await order();
      const { value } = await shop.challenge(sessionId);
      const before = await merchantBalance();
      const opened = await openCheckout(browser, shop.baseUrl, sessionId);
      const { page, context } = opened;
      try {
        const second = await gateProofs(page, sessionId, { loseAnswerOf: 1, hold: 2 });
        await payButton(page).click();
        await second.held;
        assert.equal((await merchantBalance()) - before, value, 'the payment settled; only its answer was lost');
        await assertConfirming(opened);
        second.release();
        await reconcileUntil(outcome(page).getByText('Paid. Thank you!'));
        assert.equal((await merchantBalance()) - before, value, 'paid once');
        assertSameProof(opened, 2);
      } finally {
        await context.close();
      }
    });

    // Last: it moves the chain's clock past the authorization's validBefore.
    test('a settle the facilitator answers 503 without submitting is confirmed until the chain shows the authorization expired unused: failed, then "Try again"', async () => {
      const sessionId = await order();
      const before = { merchant: await merchantBalance(), settled: (await shop.sandbox.faults.get()).stats.settledTransactions.length };
      await shop.sandbox.faults.set({ settleFault: 'unavailable' });
      const opened = await openCheckout(browser, shop.baseUrl, sessionId);
      const { page, context } = opened;
      try {
        const second = await gateProofs(page, sessionId, { hold: 2 });
        await payButton(page).click();
        await second.held;
        await assertConfirming(opened);
        await shop.sandbox.chain.increaseTime(400);
        second.release();
        await reconcileUntil(page.getByRole('button', { name: 'Try again' }));
        const failure = page.locator('#outcome.failure');
        assert.ok(await failure.isVisible());
        const sentence = (await failure.locator('p').first().textContent()) ?? '';
        assert.ok(Object.values(X402_SENTENCES).includes(sentence), `a sentence for a payment that did not go through: ${sentence}`);
        assert.equal(await page.getByText(CONFIRMING).count(), 0);
        assert.equal(await merchantBalance(), before.merchant, 'nothing moved on chain');
        assert.equal((await shop.sandbox.faults.get()).stats.settledTransactions.length, before.settled);
        assertSameProof(opened, 2);
        await checkoutScreenshots(page, 'failed-after-confirming');
        await assertAccessible(page);
      } finally {
        await shop.sandbox.faults.set({ settleFault: 'none' });
        await context.close();
      }
    });
  });
}
