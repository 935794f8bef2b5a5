// Two-factor sign-in in Debian's Chromium, as a merchant's user goes through it: sets up an
// authenticator app from the Account page (the code computed here from the key the page shows),
// signs out, signs in with the password and the app's code, is asked for a fresh code before
// changing the payout wallet, and makes an API key restricted to one scope. axe-core on each page;
// phone (360) and desktop (1280) screenshots under artifacts/two-factor/.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { totpCode, totpStep } from '../../accounts/totp.ts';
import { createUser } from '../../accounts/users.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../../testing/harness.ts';

const PASSWORD = 'correct horse battery staple';
const WALLET = '0x3333333333333333333333333333333333333333';

for (const { engine, skip } of engines) {
  describeOnEngine(`two-factor sign-in in Chromium on ${engine}`, skip || browserSkip, () => {
    let service: TestService & { baseUrl: string };
    let browser: Browser;
    // The service's clock, moved on by the test: each code below is of a step not used before.
    let clock = Date.now();
    const email = `owner-${engine}@two-factor.example`;

    before(async () => {
      [service, browser] = await Promise.all([startListeningTestService(engine, {}, { now: () => clock }), launchChromium()]);
      const { merchantId } = await service.merchant();
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
    });
    after(async () => {
      await browser?.close();
      await service?.stop();
    });

    const look = async (page: Page, name: string) => {
      await assertAccessible(page);
      if (engine === 'sqlite') await screenshots(page, 'two-factor', name);
      await page.setViewportSize({ width: 1280, height: 900 });
    };
    const signInWithPassword = async (page: Page, returnTo: string) => {
      await page.goto(`${service.baseUrl}${returnTo}`);
      await typeInto(page, 'Email', email);
      await typeInto(page, 'Password', PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
    };

    test('enrol, sign out, sign in with the code; step-up before the wallet; a restricted key', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        await signInWithPassword(page, '/dashboard/account');
        await page.waitForURL(`${service.baseUrl}/dashboard/account`);
        await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
        await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
        await page.getByRole('img', { name: 'QR code of your Till authenticator key' }).waitFor();
        const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '');
        assert.match(secret, /^[A-Z2-7]{32}$/);
        await look(page, 'enrol-qr');

        await typeInto(page, 'Code from the app', '000000' === totpCode(secret, totpStep(clock)) ? '111111' : '000000');
        await page.getByRole('button', { name: 'Turn on' }).click();
        await page.getByText('Code from the app is not right').first().waitFor();
        await typeInto(page, 'Code from the app', totpCode(secret, totpStep(clock)));
        await page.getByRole('button', { name: 'Turn on' }).click();
        await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
        assert.equal(await page.locator('.recovery-codes li').count(), 10);
        await look(page, 'recovery-codes');

        await page.goto(`${service.baseUrl}/account`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL(/\/sign-in$/);

        clock += 30_000;
        await signInWithPassword(page, '/dashboard/settings');
        await page.waitForURL(/\/sign-in\/second-factor\?return_to=%2Fdashboard%2Fsettings$/);
        await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
        await look(page, 'sign-in-second-factor');
        await typeInto(page, 'Code', '12345');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByText('That code is not right').waitFor();
        await look(page, 'sign-in-second-factor-refused');
        await typeInto(page, 'Code', totpCode(secret, totpStep(clock)));
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${service.baseUrl}/dashboard/settings`);

        // Minutes later the wallet change asks for a fresh code.
        clock += 6 * 60_000;
        await page.reload();
        await typeInto(page, 'Wallet address', WALLET);
        await typeInto(page, 'Last 4 characters', '3333');
        await typeInto(page, 'Your password', PASSWORD);
        await page.getByRole('button', { name: /payout wallet/ }).click();
        await page.getByText('Two-factor code must be given').first().waitFor();
        await look(page, 'wallet-step-up');
        // The refused form keeps the address and its last 4 characters; the password is typed again.
        assert.equal(await page.getByLabel('Wallet address', { exact: true }).inputValue(), WALLET);
        await typeInto(page, 'Your password', PASSWORD);
        await typeInto(page, 'Two-factor code', totpCode(secret, totpStep(clock)));
        await page.getByRole('button', { name: /payout wallet/ }).click();
        await page.getByText('Payout wallet saved').waitFor();

        // Fresh now: a key restricted to creating sessions, made without another code.
        await page.goto(`${service.baseUrl}/dashboard/get-paid`);
        await page.getByLabel('Restricted to the scopes ticked below').check();
        await page.getByLabel(/sessions:write/).check();
        await page.getByRole('button', { name: 'Create an API key' }).click();
        await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
        const row = page.getByRole('row').filter({ hasText: 'sessions:write' });
        assert.equal(await row.count(), 1, 'the list shows the key with its scope');
        await look(page, 'get-paid-restricted-key');

        await page.goto(`${service.baseUrl}/dashboard/account/two-factor`);
        await look(page, 'two-factor-on');
      } finally {
        await context.close();
      }
    });
  });
}
