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
import { freePort } from '../../testing/environment.ts';
import { describeOnEngine, engines, startListeningTestService, startTestService, type TestService } from '../../testing/harness.ts';

const PASSWORD = 'correct horse battery staple';
const WALLET = '0x3333333333333333333333333333333333333333';

/** axe-core on the page, then its phone and desktop screenshots (once, from the SQLite run). */
async function look(page: Page, name: string, engine: string): Promise<void> {
  await assertAccessible(page);
  if (engine === 'sqlite') await screenshots(page, 'two-factor', name);
  await page.setViewportSize({ width: 1280, height: 900 });
}

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
        await look(page, 'enrol-qr', engine);

        await typeInto(page, 'Code from the app', '000000' === totpCode(secret, totpStep(clock)) ? '111111' : '000000');
        await page.getByRole('button', { name: 'Turn on' }).click();
        await page.getByText('Code from the app is not right').first().waitFor();
        await typeInto(page, 'Code from the app', totpCode(secret, totpStep(clock)));
        await page.getByRole('button', { name: 'Turn on' }).click();
        await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
        assert.equal(await page.locator('.recovery-codes li').count(), 10);
        await look(page, 'recovery-codes', engine);

        await page.goto(`${service.baseUrl}/account`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL(/\/sign-in$/);

        clock += 30_000;
        await signInWithPassword(page, '/dashboard/settings');
        await page.waitForURL(/\/sign-in\/second-factor\?return_to=%2Fdashboard%2Fsettings$/);
        await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
        await look(page, 'sign-in-second-factor', engine);
        await typeInto(page, 'Code', '12345');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByText('That code is not right').waitFor();
        await look(page, 'sign-in-second-factor-refused', engine);
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
        await look(page, 'wallet-step-up', engine);
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
        await look(page, 'get-paid-restricted-key', engine);

        await page.goto(`${service.baseUrl}/dashboard/account/two-factor`);
        await look(page, 'two-factor-on', engine);
      } finally {
        await context.close();
      }
    });
  });
}

// Passkeys through Chromium's virtual authenticator (CDP WebAuthn). WebAuthn takes no IP address as
// its relying party, so this service is reached as http://localhost.
for (const { engine, skip } of engines) {
  describeOnEngine(`passkeys in Chromium on ${engine}`, skip || browserSkip, () => {
    let service: TestService;
    let browser: Browser;
    let baseUrl: string;
    const owner = `passkey-owner-${engine}@two-factor.example`;
    const other = `passkey-other-${engine}@two-factor.example`;

    before(async () => {
      const port = await freePort();
      baseUrl = `http://localhost:${port}`;
      [service, browser] = await Promise.all([startTestService(engine, { TILL_BASE_URL: baseUrl }), launchChromium()]);
      await service.app.listen({ port, host: '127.0.0.1' });
      for (const email of [owner, other]) {
        const { merchantId } = await service.merchant();
        await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      }
    });
    after(async () => {
      await browser?.close();
      await service?.stop();
    });

    test('a passkey is added and used to sign in; another user’s passkey is refused and nothing is signed in', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
      const signIn = async (email: string, returnTo: string) => {
        await page.goto(`${baseUrl}/sign-in?return_to=${encodeURIComponent(returnTo)}`);
        await typeInto(page, 'Email', email);
        await typeInto(page, 'Password', PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
      };
      const signOut = async () => {
        await page.goto(`${baseUrl}/account`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL(/\/sign-in$/);
      };
      const addPasskey = async (email: string, name: string) => {
        await signIn(email, '/dashboard/account/two-factor');
        await page.waitForURL(/\/dashboard\/account\/two-factor$/);
        await page.getByLabel('Name of the passkey').fill(name);
        await page.getByRole('button', { name: 'Add a passkey' }).click();
        await page.getByText('Passkey added').waitFor();
      };
      try {
        await addPasskey(owner, 'Laptop');
        assert.match((await page.locator('.passkeys').textContent()) ?? '', /Laptop/);
        await look(page, 'passkey-added', engine);
        const [ownerCredential] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
        await signOut();
        await addPasskey(other, 'Other laptop');
        await signOut();

        // The owner's passkey gone from the authenticator, and the page's options opened to any passkey: the other user's answers.
        await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: ownerCredential!.credentialId });
        await page.route('**/sign-in/second-factor/passkey/options', async (route) => {
          const options = await (await route.fetch()).json();
          await route.fulfill({ json: { ...options, allowCredentials: [] } });
        });
        await signIn(owner, '/dashboard');
        await page.waitForURL(/\/sign-in\/second-factor/);
        await look(page, 'sign-in-passkey', engine);
        await page.getByRole('button', { name: 'Use a passkey' }).click();
        await page.getByText('This passkey is not one of yours.').waitFor();
        assert.equal((await page.request.get(`${baseUrl}/dashboard`, { maxRedirects: 0 })).status(), 303, 'not signed in');
        await look(page, 'sign-in-passkey-refused', engine);

        await page.unroute('**/sign-in/second-factor/passkey/options');
        await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: ownerCredential! });
        await page.getByRole('button', { name: 'Use a passkey' }).click();
        await page.waitForURL(`${baseUrl}/dashboard`);
      } finally {
        await context.close();
      }
    });
  });
}
