// The hosted payment page in Debian's Chromium, on the sandbox chain: a test wallet injected over
// EIP-6963 pays, the page lands on successUrl; the states, axe-core, screenshots, and no request to
// another origin.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Address } from 'viem';
import { RateUnavailableError } from '../../money/rates.ts';
import {
  browserSkip,
  injectTestWallet,
  launchChromium,
  screenshots,
  seriousViolations,
  type TestWalletOptions,
  type WalletCall,
} from '../../testing/browser.ts';
import { clearOfMinuteEnd } from '../../testing/clock.ts';
import { sandboxSettings } from '../../testing/environment.ts';
import { type PayingShop, startPayingShop, startTestService, type TestService } from '../../testing/harness.ts';
import { newAccount } from '../../testing/payer.ts';
import { createSession } from '../../testing/shop.ts';
import { waitFor } from '../../testing/wait.ts';
import { setWebhook } from '../../webhooks/endpoints.ts';
import { startReceiver } from '../../webhooks/fixtures/receiver.ts';
import { X402_ERRORS } from '../../x402/protocol.ts';
import { X402_SENTENCES } from './browser/messages.ts';

const SHOP = 'https://shop.example';

test('every x402 error code has a sentence for buyers', () => {
  assert.deepEqual(Object.keys(X402_SENTENCES).sort(), Object.keys(X402_ERRORS).sort());
});

describe('hosted payment page in Chromium', { skip: browserSkip }, () => {
  let shop: PayingShop;
  let browser: Browser;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  let later: TestService;
  let laterUrl: string;
  let offset = 0;
  // Exchange rates for the live service: EUR, observed 57 s ago (of 60 allowed), until turned off.
  let ratesUp = true;
  const rates = createServer((_request, response) => {
    if (!ratesUp) return void response.writeHead(500).end();
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ base: 'USD', timestamp: Math.floor(Date.now() / 1000) - 57, rates: { EUR: 0.92 } }));
  });

  before(async () => {
    [shop, browser, hook] = await Promise.all([
      startPayingShop('sqlite', { TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, { name: 'Corner Coffee', workers: true }),
      launchChromium(),
      startReceiver(),
      new Promise<void>((resolve) => rates.listen(0, '127.0.0.1', resolve)),
    ]);
    const ratesUrl = `http://127.0.0.1:${(rates.address() as AddressInfo).port}/rates.json`;
    await setWebhook(shop.service.context.db, shop.service.config.secretKey, shop.merchantId, { url: hook.url }, 'sandbox');
    // A second service, in live mode on the same chain, whose clock can jump ahead (expired
    // sessions), whose exchange rates go stale (USD needs none; EUR's does) and which makes one
    // new quote per session and minute.
    const { TILL_FACILITATOR_URL, TILL_BASE_RPC_URL, TILL_USDC_ADDRESS } = sandboxSettings(shop.sandbox);
    later = await startTestService(
      'sqlite',
      {
        TILL_FACILITATOR_URL,
        TILL_BASE_RPC_URL,
        TILL_USDC_ADDRESS,
        TILL_RATES_URL: ratesUrl,
        TILL_RATES_MAX_AGE_SECONDS: '60',
        TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '1',
      } as Record<string, string>,
      { now: () => Date.now() + offset },
    );
    laterUrl = await later.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await browser?.close();
    await hook?.close();
    await later?.stop();
    rates.close();
    await shop?.stop();
  });

  type Opened = { page: Page; context: BrowserContext; requests: string[]; calls: WalletCall[] };

  /** A fresh browser context on the page of `sessionId`, with a test wallet unless `account` is null. */
  async function open(sessionId: string, wallet: Omit<TestWalletOptions, 'rpcUrl'> | null, base = shop.baseUrl): Promise<Opened & { status: number }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (request) => {
      requests.push(request.url());
    });
    // The merchant's pages, answered here: only navigations of the buyer may go there.
    await page.route(`${SHOP}/**`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Shop</title><p>Back at the shop' }),
    );
    const calls = wallet ? await injectTestWallet(page, { ...wallet, rpcUrl: shop.sandbox.rpcUrl }) : [];
    const response = await page.goto(`${base}/checkout/pay?uid=${encodeURIComponent(sessionId)}`);
    return { page, context, requests, calls, status: response!.status() };
  }

  /** Every request went to the service, but the buyer's navigations to the session's own URLs. */
  function assertOwnOrigin(requests: string[], base: string, allowed: string[] = []) {
    const foreign = requests.filter((url) => !url.startsWith(`${base}/`) && !allowed.some((prefix) => url.startsWith(prefix)));
    assert.deepEqual(foreign, []);
  }

  async function assertAccessible(page: Page) {
    const violations = await seriousViolations(page);
    assert.deepEqual(
      violations.map((v) => `${v.id}: ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`),
      [],
    );
  }

  let orders = 1041;
  const fixedSession = () =>
    shop.createSession({
      amount: 4.5,
      currency: 'USD',
      concept: 'Flat white and a croissant',
      orderId: `A-${++orders}`,
      successUrl: `${SHOP}/thanks?ref=A-${orders}`,
      cancelUrl: `${SHOP}/cart`,
      failUrl: `${SHOP}/failed`,
    });

  test('a test wallet pays a fixed session: exact quote moves on chain, the page lands on successUrl, the webhook arrives', async () => {
    const sessionId = await fixedSession();
    const offer = await shop.challenge(sessionId);
    const payer = await shop.fundedPayer('10');
    const before = await shop.sandbox.balanceOf(shop.merchantWallet as Address);
    const { page, context, requests, calls, status } = await open(sessionId, { account: payer });
    // The page goes back to the shop 5 s after it says "Paid"; the shop's answer waits until the paid
    // page has been checked, so a slow check never finds the shop's page instead.
    let backToShop = () => {};
    const checked = new Promise<void>((resolve) => {
      backToShop = resolve;
    });
    await page.route(`${SHOP}/thanks**`, async (route) => {
      await checked;
      await route.fallback();
    });
    try {
      assert.equal(status, 200);
      await page.getByText('Test payment — no real money.').waitFor();
      assert.equal(await page.locator('#usdc-text').textContent(), '4.50');
      await screenshots(page, 'checkout', 'payable');
      await assertAccessible(page);
      assert.ok(await page.locator('aside.qr').isVisible(), 'the QR code while there is something to pay');
      await page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
      await page.locator('#outcome').getByText('Paid. Thank you!').waitFor();
      assert.ok(await page.locator('aside.qr').isHidden(), 'no QR code once paid');
      assert.ok(await page.locator('#countdown').isHidden(), 'no countdown once paid');
      await assertAccessible(page);
      await screenshots(page, 'checkout', 'paid-in-page');
      const receiptHref = await page.getByRole('link', { name: 'View the receipt' }).getAttribute('href');
      assert.match(receiptHref!, /^\/checkout\/v2\/orders\/receipt\/TX-/);
      backToShop();
      await page.waitForURL(`${SHOP}/thanks?**`, { timeout: 15_000 });
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get('ref'), 'A-1042');
      assert.equal(landed.searchParams.get('paymentSessionId'), sessionId);
      assert.equal(`/checkout/v2/orders/receipt/${landed.searchParams.get('publicOrderId')}`, receiptHref);
      assert.equal((await shop.sandbox.balanceOf(shop.merchantWallet as Address)) - before, offer.value);
      assert.ok(calls.some((c) => c.method === 'eth_signTypedData_v4'));
      assertOwnOrigin(requests, shop.baseUrl, [`${SHOP}/thanks?`]);
      assert.deepEqual(await context.cookies(), []);
      await waitFor(
        () => hook.received.some((r) => JSON.parse(r.body).event === 'payment.succeeded' && r.body.includes(sessionId)),
        'the payment.succeeded webhook',
      );

      // The same page again: paid, with the receipt, and nothing to pay.
      const again = await open(sessionId, null);
      assert.equal(again.status, 200);
      await again.page.getByRole('heading', { name: 'Paid' }).waitFor();
      assert.equal(await again.page.getByRole('button', { name: /Pay with/ }).count(), 0);
      assert.ok(await again.page.getByRole('link', { name: /View the receipt/ }).isVisible());
      await screenshots(again.page, 'checkout', 'already-paid');
      await assertAccessible(again.page);
      await again.context.close();
    } finally {
      backToShop();
      await context.close();
    }
  });

  test('an editable session is paid at a chosen amount above the floor; below it is refused on the page and by the server', async () => {
    const sessionId = await shop.createSession({
      amount: 10,
      currency: 'USD',
      editable: true,
      minAmount: 5,
      concept: 'Donation',
      successUrl: `${SHOP}/thanks`,
    });
    const payer = await shop.fundedPayer('20');
    const { page, context, requests } = await open(sessionId, { account: payer });
    try {
      const input = page.getByLabel('Amount to pay (USD)');
      await input.fill('3');
      await page.getByRole('button', { name: 'Update' }).click();
      await page.getByText('The amount must be at least 5.00 USD.').waitFor();
      assert.equal(await input.getAttribute('aria-invalid'), 'true');
      assert.ok(await page.getByRole('button', { name: 'Pay with Test Wallet' }).isDisabled());
      await screenshots(page, 'checkout', 'editable-below-floor');
      // Nothing is wider than the narrowest phone.
      await page.setViewportSize({ width: 320, height: 640 });
      assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 320);
      await assertAccessible(page);
      const server = await fetch(`${shop.baseUrl}/x402/session/${sessionId}?amount=3`);
      assert.equal(server.status, 402);
      assert.equal(((await server.json()) as { error: string }).error, 'amount_below_minimum');

      await input.fill('12.34');
      await page.getByRole('button', { name: 'Update' }).click();
      await page.locator('#usdc-text', { hasText: '12.34' }).waitFor();
      const before = await shop.sandbox.balanceOf(shop.merchantWallet as Address);
      await page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
      await page.locator('#outcome').getByText('Paid. Thank you!').waitFor();
      assert.equal((await shop.sandbox.balanceOf(shop.merchantWallet as Address)) - before, 12_340_000n);
      assertOwnOrigin(requests, shop.baseUrl, [`${SHOP}/thanks?`]);
    } finally {
      await context.close();
    }
  });

  test('the page, its stylesheet and main script weigh at most 60 KB gzipped, and the first render needs no script', async () => {
    const sessionId = await fixedSession();
    let gzipped = 0;
    for (const path of [`/checkout/pay?uid=${sessionId}`, '/assets/checkout.css', '/assets/checkout.js'])
      gzipped += gzipSync(await (await fetch(`${shop.baseUrl}${path}`)).text()).length;
    assert.ok(gzipped <= 60 * 1024, `${gzipped} bytes gzipped`);
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${shop.baseUrl}/checkout/pay?uid=${sessionId}`);
      await page.getByRole('heading', { name: 'Pay 4.50 USD' }).waitFor();
      assert.equal(await page.locator('#usdc-text').textContent(), '4.50');
    } finally {
      await context.close();
    }
  });

  /** A fixed session's page, opened with a test wallet holding `usdc`, its Pay button clicked. */
  async function clickPay(usdc: string, wallet: Omit<TestWalletOptions, 'rpcUrl' | 'account'> = {}) {
    const sessionId = await fixedSession();
    const opened = await open(sessionId, { account: await shop.fundedPayer(usdc), ...wallet });
    await opened.page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
    return opened;
  }

  test('cancel lands on cancelUrl', async () => {
    const sessionId = await fixedSession();
    const { page, context } = await open(sessionId, { account: newAccount() });
    try {
      await page.getByRole('link', { name: 'Cancel and return to the merchant' }).click();
      await page.waitForURL(`${SHOP}/cart`);
    } finally {
      await context.close();
    }
  });

  test('a wallet with too little USDC is told so and no payment is attempted', async () => {
    const { page, context, requests, calls } = await clickPay('1');
    try {
      await page.locator('#outcome').getByText('Your wallet holds 1.00 USDC on Base, and this payment needs 4.50 USDC.').waitFor();
      assert.ok(!calls.some((c) => c.method === 'eth_signTypedData_v4'));
      assert.ok(!requests.some((url) => url.includes('/x402/') && url.includes('X-PAYMENT')));
      await screenshots(page, 'checkout', 'insufficient-balance');
      await assertAccessible(page);
    } finally {
      await context.close();
    }
  });

  test('a rejected signature leaves the page ready to retry; a wallet on another chain is asked to switch', async () => {
    const { page, context, calls } = await clickPay('10', { chainId: '0x1', rejectSignature: true });
    try {
      await page.getByText('You declined in your wallet. Nothing was charged; you can try again.').waitFor();
      assert.deepEqual(
        calls.filter((c) => c.method === 'wallet_switchEthereumChain').map((c) => c.params),
        [[{ chainId: '0x2105' }]],
      );
      assert.ok(await page.getByRole('button', { name: 'Pay with Test Wallet' }).isEnabled());
    } finally {
      await context.close();
    }
  });

  test('a wallet that does not know Base is asked to add it', async () => {
    const { page, context, calls } = await clickPay('10', { chainId: '0x1', lacksBase: true });
    try {
      await page.locator('#outcome').getByText('Paid. Thank you!').waitFor();
      const added = calls.find((c) => c.method === 'wallet_addEthereumChain')?.params as [{ chainId: string; chainName: string; rpcUrls: string[] }];
      assert.equal(added[0].chainId, '0x2105');
      assert.equal(added[0].chainName, 'Base');
    } finally {
      await context.close();
    }
  });

  test('a definitive failure offers Try again and the failUrl; the page does not leave on its own', async () => {
    const { page, context } = await clickPay('10', { signWith: newAccount() });
    try {
      await page.locator('#outcome').getByText(X402_SENTENCES.invalid_signature).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Return to the merchant', exact: true }).getAttribute('href'), `${SHOP}/failed`);
      assert.ok(await page.getByRole('link', { name: 'Cancel and return to the merchant' }).isHidden());
      await screenshots(page, 'checkout', 'failed');
      await assertAccessible(page);
      await page.getByRole('button', { name: 'Try again' }).click();
      assert.ok(await page.locator('#outcome').isHidden());
      assert.ok(await page.getByRole('link', { name: 'Cancel and return to the merchant' }).isVisible());
      assert.ok(page.url().startsWith(shop.baseUrl));
    } finally {
      await context.close();
    }
  });

  test('payment_in_progress is asked again quietly until the payment settles', async () => {
    const sessionId = await fixedSession();
    const payer = await shop.fundedPayer('10');
    const { page, context } = await open(sessionId, { account: payer });
    let held = 0;
    // The first answer to the proof says another payment is being settled, as the endpoint does.
    await page.route(`${shop.baseUrl}/x402/session/**`, async (route) => {
      if (!route.request().headers()['x-payment'] || held++ > 0) return route.continue();
      await route.fulfill({
        status: 402,
        headers: { 'retry-after': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ x402Version: 2, error: 'payment_in_progress', message: X402_ERRORS.payment_in_progress, accepts: [] }),
      });
    });
    try {
      await page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
      await page.locator('#outcome').getByText('Paid. Thank you!').waitFor();
      assert.equal(held, 2);
    } finally {
      await context.close();
    }
  });

  test('a STATIC session is paid again and again', async () => {
    const sessionId = await shop.createSession({ amount: 1.25, currency: 'USD', orderType: 'STATIC', concept: 'Tip jar' });
    const payer = await shop.fundedPayer('10');
    const before = await shop.sandbox.balanceOf(shop.merchantWallet as Address);
    const { page, context } = await open(sessionId, { account: payer });
    try {
      for (let i = 0; i < 2; i++) {
        if (i) await page.reload();
        assert.equal(await page.locator('#countdown').count(), 0);
        await page.getByRole('button', { name: 'Pay with Test Wallet' }).click();
        await page.locator('#outcome').getByText('Paid. Thank you!').waitFor();
      }
      assert.equal((await shop.sandbox.balanceOf(shop.merchantWallet as Address)) - before, 2_500_000n);
    } finally {
      await context.close();
    }
  });

  test('the sandbox wallet pays with no injected provider, by keyboard alone', async () => {
    const sessionId = await fixedSession();
    const { page, context, requests } = await open(sessionId, null);
    try {
      await page.getByRole('button', { name: /Pay with Sandbox wallet/ }).focus();
      await page.keyboard.press('Enter');
      // The sandbox wallet funds itself from the faucet, then pays and waits for the settlement: on a
      // busy machine that takes longer than a click on an already funded wallet.
      await page.locator('#outcome').getByText('Paid. Thank you!').waitFor({ timeout: 60_000 });
      assertOwnOrigin(requests, shop.baseUrl, [`${SHOP}/thanks?`]);
    } finally {
      await context.close();
    }
  });

  /** A session's page answers `status` with `heading`, passes axe-core, and is photographed as `name`. */
  async function assertStatePage(sessionId: string, base: string, status: number, heading: string, name: string) {
    const { page, context, status: answered } = await open(sessionId, null, base);
    try {
      assert.equal(answered, status);
      await page.getByRole('heading', { name: heading }).waitFor();
      await screenshots(page, 'checkout', name);
      await assertAccessible(page);
    } finally {
      await context.close();
    }
  }

  test('in live mode the page has no sandbox banner and no sandbox wallet; no exchange rate is a 503 page, too many quotes a 429', async () => {
    const merchant = await later.merchant({ walletAddress: newAccount().address });
    const usd = await createSession(laterUrl, merchant.apiKey, { amount: 9, currency: 'USD', concept: 'Live order' });
    const live = await open(usd, null, laterUrl);
    try {
      assert.equal(live.status, 200);
      await live.page.getByRole('heading', { name: 'Pay 9.00 USD' }).waitFor();
      assert.equal(await live.page.getByText('Sandbox').count(), 0);
      assert.equal(await live.page.locator('script[src*="sandbox"]').count(), 0);
      // The sandbox wallet's script is served for test-mode pages beside live; a live page never loads it.
      await live.page.getByText('No browser wallet was found.').waitFor();
      await screenshots(live.page, 'checkout', 'live-no-wallet-extension');
      await assertAccessible(live.page);
    } finally {
      await live.context.close();
    }
    // A second new quote within the minute is refused: the page says to come back.
    const editable = await createSession(laterUrl, merchant.apiKey, { amount: 9, currency: 'USD', editable: true });
    await clearOfMinuteEnd();
    assert.equal((await fetch(`${laterUrl}/x402/session/${editable}?amount=7`)).status, 402);
    await assertStatePage(editable, laterUrl, 429, 'Too many requests for this payment', 'too-many-quotes');
    const eur = await createSession(laterUrl, merchant.apiKey, { amount: 9, currency: 'EUR' });
    ratesUp = false;
    // The rates cached at the session's creation (observed 57 s before) pass the 60 s limit, and cannot be fetched again.
    await waitFor(
      () =>
        later.context.rates.getRate('EUR').then(
          () => false,
          (error: unknown) => error instanceof RateUnavailableError,
        ),
      'the live service to refuse its stale EUR rate',
      15_000,
    );
    await assertStatePage(eur, laterUrl, 503, "We can't price this payment right now", 'rate-unavailable');
  });

  test('a malformed uid is an unknown session, never an error', async () => {
    for (const query of ['', '?uid=', '?uid[]=x', '?uid=a&uid=b', `?uid=${'x'.repeat(300)}`, '?uid=%00%ff', '?uid=%F0%9F%92%B3', '?uid=<script>']) {
      const response = await fetch(`${shop.baseUrl}/checkout/pay${query}`);
      assert.equal(response.status, 404, query);
      assert.match(response.headers.get('content-security-policy') ?? '', /script-src 'self'/);
      assert.doesNotMatch(await response.text(), /<script>/);
    }
  });

  test('unknown, expired, no-wallet and too-small sessions each show their page with its status', async () => {
    await assertStatePage('ps_nope', shop.baseUrl, 404, 'Payment not found', 'unknown');

    // 1 KRW is about 0.00072 USDC, under the 0.001 USDC the facilitator settles.
    const tooSmall = await createSession(shop.baseUrl, shop.apiKey, { amount: 1, currency: 'KRW', concept: 'Sticker', cancelUrl: `${SHOP}/cart` });
    await assertStatePage(tooSmall, shop.baseUrl, 422, 'This amount is too small to pay in USDC', 'below-minimum');

    const noWalletMerchant = await shop.service.merchant({ name: 'Walletless Books' });
    const noWalletSession = await createSession(shop.baseUrl, noWalletMerchant.apiKey, { amount: 9, currency: 'USD', cancelUrl: `${SHOP}/cart` });
    await assertStatePage(noWalletSession, shop.baseUrl, 422, "This shop can't take this payment yet", 'no-wallet');

    const merchant = await later.merchant({ walletAddress: newAccount().address });
    offset = 0;
    const expiring = await createSession(laterUrl, merchant.apiKey, { amount: 9, currency: 'USD', concept: 'Old order' });
    offset = 2 * 86_400_000;
    await assertStatePage(expiring, laterUrl, 410, 'This payment has expired', 'expired');
  });
});
