// The merchant's brand in Debian's Chromium: the hosted payment page and the receipt as they are
// without one, then a logo uploaded and an accent colour set in Settings (a low-contrast one
// refused with its ratio), then both pages again in the brand. axe-core on each; phone and desktop
// screenshots under artifacts/checkout/, artifacts/receipt/ and artifacts/dashboard/.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { findBrand, setAccentColor } from '../../merchants/brand.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { forwardingPort } from '../../testing/tcp-proxy.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const LOGO = join(import.meta.dirname, '../../merchants/fixtures/logo.png');

describe("the hosted page and the receipt in the merchant's brand, in Chromium", { skip: browserSkip }, () => {
  let shop: PayingShop;
  let browser: Browser;
  let forward: Awaited<ReturnType<typeof forwardingPort>>;
  let baseUrl: string;
  let receiptUrl: string;
  let orders = 4200;

  before(async () => {
    forward = await forwardingPort();
    baseUrl = `http://127.0.0.1:${forward.port}`;
    [shop, browser] = await Promise.all([startPayingShop('sqlite', { TILL_BASE_URL: baseUrl }, { name: 'Corner Coffee' }), launchChromium()]);
    forward.forwardTo(Number(new URL(shop.baseUrl).port));
    const { sessionId, payer, offer } = await shop.readyToPay({ amount: 0.85, currency: 'USD', orderId: 'A-4199', concept: 'Espresso' });
    const paid = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
    const answer = await paid.text();
    assert.equal(paid.status, 200, answer);
    receiptUrl = `${baseUrl}/checkout/v2/orders/receipt/${(JSON.parse(answer) as { paymentId: string }).paymentId}`;
    await createUser(shop.service.context.db, { merchantId: shop.merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await shop?.stop();
    forward?.server.close();
  });

  /** A new page of a new context, at the desktop size. */
  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    return context.newPage();
  }

  /** A new session's hosted page and the receipt, each checked by axe and shot at both sizes as `name`. */
  async function checkoutAndReceipt(name: string): Promise<{ checkout: Page; receipt: Page }> {
    const sessionId = await shop.createSession({ amount: 4.5, currency: 'USD', concept: 'Flat white and a croissant', orderId: `A-${++orders}` });
    const checkout = await newPage();
    await checkout.goto(`${baseUrl}/checkout/pay?uid=${sessionId}`);
    await checkout.getByRole('heading', { name: 'Pay 4.50 USD' }).waitFor();
    await checkout.getByRole('button', { name: /Pay with Sandbox wallet/ }).waitFor();
    await assertAccessible(checkout);
    await screenshots(checkout, 'checkout', name);
    await checkout.setViewportSize({ width: 1280, height: 900 });
    const receipt = await newPage();
    await receipt.goto(receiptUrl);
    await receipt.getByRole('heading', { name: 'Receipt' }).waitFor();
    await assertAccessible(receipt);
    await receipt.setViewportSize({ width: 360, height: 740 });
    assert.ok(
      await receipt.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
      'on a phone the receipt does not overflow sideways: its ids and hashes wrap',
    );
    await screenshots(receipt, 'receipt', name);
    await receipt.setViewportSize({ width: 1280, height: 900 });
    return { checkout, receipt };
  }

  const cardTopBorder = (page: Page, selector: string) =>
    page
      .locator(selector)
      .first()
      .evaluate((element) => {
        const style = getComputedStyle(element);
        return `${style.borderTopWidth} ${style.borderTopColor}`;
      });

  test('without a brand: no logo, no brand stylesheet, the pages as they always were', async () => {
    const { checkout, receipt } = await checkoutAndReceipt('brand-none');
    for (const page of [checkout, receipt]) {
      assert.equal(await page.locator('img.brand-logo').count(), 0);
      assert.equal(await page.locator('link[href^="/brand/"]').count(), 0);
    }
    assert.equal(await cardTopBorder(checkout, 'main.card'), '1px rgb(212, 212, 216)');
    assert.equal(await receipt.locator('.brand-header').count(), 0);
    await Promise.all([checkout.context().close(), receipt.context().close()]);
  });

  test('set in Settings: a logo uploaded, a yellow accent refused with its ratio, a brown one saved; both pages then show them', async () => {
    const page = await newPage();
    try {
      await page.goto(`${baseUrl}/dashboard/settings`);
      await typeInto(page, 'Email', EMAIL);
      await typeInto(page, 'Password', PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/settings`);

      await page.getByLabel('Logo', { exact: true }).setInputFiles(LOGO);
      await page.getByRole('button', { name: 'Upload logo' }).click();
      await page.getByText('Logo saved: your payment page and receipts show it.').waitFor();
      await page.getByRole('img', { name: 'Corner Coffee' }).waitFor();

      await typeInto(page, 'Accent colour', '#ffff00');
      await page.getByRole('button', { name: 'Save accent colour' }).click();
      await page
        .getByRole('alert')
        .getByText(/contrast of only 1\.07:1/)
        .waitFor();
      assert.equal((await findBrand(shop.service.context.db, shop.merchantId)).accentColor, null);
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'settings-brand-refused');
      await page.setViewportSize({ width: 1280, height: 900 });

      await page.getByLabel('Accent colour', { exact: true }).fill('#7c2d12');
      await page.getByRole('button', { name: 'Save accent colour' }).click();
      await page.getByText('Accent colour saved: your payment page and receipts use it.').waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'settings-brand');
    } finally {
      await page.context().close();
    }

    const { checkout, receipt } = await checkoutAndReceipt('brand');
    for (const page of [checkout, receipt]) {
      const logo = page.getByRole('img', { name: 'Corner Coffee' });
      await logo.waitFor();
      assert.ok((await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)) === 240, 'the logo loaded from Till');
    }
    // The accent: the card's top bar and the wallet button on the hosted page, the bar under the receipt's logo.
    assert.equal(await cardTopBorder(checkout, 'main.card'), '4px rgb(124, 45, 18)');
    assert.equal(
      await checkout.getByRole('button', { name: /Pay with Sandbox wallet/ }).evaluate((button) => getComputedStyle(button).borderColor),
      'rgb(124, 45, 18)',
    );
    assert.equal(
      await receipt
        .locator('.brand-header')
        .evaluate((header) => `${getComputedStyle(header).borderBottomWidth} ${getComputedStyle(header).borderBottomColor}`),
      '4px rgb(124, 45, 18)',
    );
    await Promise.all([checkout.context().close(), receipt.context().close()]);
  });
  // #767676 passes the 4.5:1 check against white (white text on it, and it as text on white), but not
  // on the pale green of the paid box (4.33:1): no text is drawn in the accent there.
  test('an accent of #767676: the hosted page unpaid, paid in the page and paid on a later visit, and the receipt, each axe-clean', async () => {
    await setAccentColor(shop.service.context.db, shop.merchantId, '#767676');
    const sessionId = await shop.createSession({ amount: 4.5, currency: 'USD', concept: 'Flat white and a croissant', orderId: `A-${++orders}` });
    const checkout = await newPage();
    try {
      await checkout.goto(`${baseUrl}/checkout/pay?uid=${sessionId}`);
      const pay = checkout.getByRole('button', { name: /Pay with Sandbox wallet/ });
      await pay.waitFor();
      // The primary action looks primary: filled in the accent, white text on it.
      assert.deepEqual(await pay.evaluate((button) => [getComputedStyle(button).backgroundColor, getComputedStyle(button).color]), [
        'rgb(118, 118, 118)',
        'rgb(255, 255, 255)',
      ]);
      await assertAccessible(checkout);
      await screenshots(checkout, 'checkout', 'brand-767676-unpaid');
      await checkout.setViewportSize({ width: 1280, height: 900 });

      await pay.click();
      await checkout.locator('#outcome').getByText('Paid. Thank you!').waitFor({ timeout: 30_000 });
      await checkout.getByRole('heading', { name: 'Paid 4.50 USD' }).waitFor();
      await assertAccessible(checkout);

      // The page of a paid session, visited again: "Paid", never "Pay … USD"; the receipt is the primary action.
      await checkout.reload();
      await checkout.getByRole('heading', { level: 1, name: 'Paid 4.50 USD' }).waitFor();
      assert.equal(await checkout.getByRole('heading', { name: /^Pay / }).count(), 0, 'no "Pay … USD" heading once paid');
      const receiptLink = checkout.getByRole('link', { name: 'View the receipt' });
      assert.deepEqual(
        await receiptLink.evaluate((link) => [getComputedStyle(link).backgroundColor, getComputedStyle(link).color]),
        ['rgb(118, 118, 118)', 'rgb(255, 255, 255)'],
        'white on the accent, never the accent on the green box',
      );
      await assertAccessible(checkout);
      await screenshots(checkout, 'checkout', 'brand-767676-paid');
      await checkout.setViewportSize({ width: 1280, height: 900 });

      await receiptLink.click();
      await checkout.getByRole('heading', { name: 'Receipt' }).waitFor();
      assert.match((await checkout.locator('.receipt-total').textContent()) ?? '', /4\.50 USD\s*Paid/);
      assert.match((await checkout.locator('main').textContent()) ?? '', /4\.50 USDC on Base/);
      await assertAccessible(checkout);
      await screenshots(checkout, 'receipt', 'paid-brand-767676');
      // Printed, it keeps the facts and drops the note about keeping it.
      await checkout.emulateMedia({ media: 'print' });
      assert.equal(await checkout.locator('.no-print').isVisible(), false);
      assert.ok(await checkout.getByText('Receipt number').isVisible());
      await checkout.emulateMedia({ media: 'screen' });
    } finally {
      await checkout.context().close();
    }
  });
  test("a logo far over the 1 MiB the form takes, uploaded from Settings, gets the page's own message under the field", async () => {
    const page = await newPage();
    try {
      await page.goto(`${baseUrl}/dashboard/settings`);
      await typeInto(page, 'Email', EMAIL);
      await typeInto(page, 'Password', PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/settings`);
      // From a file on disk, as a merchant picks one: 30 MB, thirty times what the form takes.
      const poster = join(mkdtempSync(join(tmpdir(), 'till-logo-')), 'poster.png');
      writeFileSync(poster, Buffer.alloc(30 * 1024 * 1024));
      await page.getByLabel('Logo', { exact: true }).setInputFiles(poster);
      // The earlier test uploaded a logo: this one replaces it.
      await page.getByRole('button', { name: /^(Upload|Replace) logo$/ }).click();
      await page
        .getByRole('alert')
        .getByText(/^Logo is about 30\.0 MB: at most 256 KB are taken/)
        .waitFor();
      assert.equal(await page.getByLabel('Logo', { exact: true }).getAttribute('aria-invalid'), 'true');
      await page.locator('#field-logo-problem').waitFor();
      await assertAccessible(page);
      await screenshots(page, 'dashboard', 'settings-logo-too-large');
    } finally {
      await page.context().close();
    }
  });
});
