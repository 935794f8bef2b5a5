// A coding agent's authorization in Debian's Chromium, as a merchant lives it: the agent opens the
// authorization URL, the merchant signs in, reads the consent screen, opts in to one more scope and
// allows; the agent's callback gets a code that the token endpoint exchanges. Then the merchant
// revokes the agent on the dashboard's Developers page. axe-core on every page, screenshots of each.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots } from '../../testing/browser.ts';
import { freePort } from '../../testing/environment.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const CLIENT_NAME = 'Acme Coding Agent';

describe('a coding agent authorized in Chromium', { skip: browserSkip }, () => {
  let service: TestService;
  let baseUrl: string;
  let browser: Browser;
  let agentUrl: string;
  // The coding agent: its Client ID Metadata Document, and a callback page that says what it got.
  const agent = createServer((request, response) => {
    const url = new URL(request.url ?? '/', agentUrl);
    if (url.pathname === '/client.json')
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          client_id: `${agentUrl}/client.json`,
          client_name: CLIENT_NAME,
          redirect_uris: [`${agentUrl}/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
    // A hostile agent's document: a control character in its name.
    if (url.pathname === '/hostile.json')
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          client_id: `${agentUrl}/hostile.json`,
          client_name: 'Evil\u0000Agent',
          redirect_uris: [`${agentUrl}/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
    if (url.pathname === '/callback')
      return void response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><html lang="en"><title>Agent</title><h1>Authorization received</h1><p>You can go back to your terminal.</p></html>');
    response.writeHead(404).end();
  });

  before(async () => {
    // The service's own address is its base URL: dashboard form posts check the Origin against it.
    const port = await freePort();
    [service, browser] = await Promise.all([
      startTestService('sqlite', { TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true', TILL_BASE_URL: `http://127.0.0.1:${port}` }),
      launchChromium(),
    ]);
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    agentUrl = `http://127.0.0.1:${(agent.address() as AddressInfo).port}`;
    baseUrl = await service.app.listen({ port, host: '127.0.0.1' });
    const { merchantId } = await service.merchant({ name: 'Corner Coffee' });
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    agent.close();
    await service?.stop();
  });

  test('sign in, consent with one more opt-in scope, the code exchanged; then the agent revoked from the account', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL('/oauth/authorize', baseUrl);
      const state = randomBytes(16).toString('base64url');
      for (const [name, value] of Object.entries({
        response_type: 'code',
        client_id: `${agentUrl}/client.json`,
        redirect_uri: `${agentUrl}/callback`,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        scope: 'settings:read orders:read keys:write',
        state,
      }))
        authorize.searchParams.set(name, value);

      // Signed out: the authorization request goes on to the sign-in page, which comes back to consent.
      await page.goto(authorize.href);
      await page.waitForURL(/\/sign-in\?return_to=%2Foauth%2Fconsent%2F/);
      await assertAccessible(page);
      await screenshots(page, 'oauth', 'sign-in');
      await page.getByLabel('Email').click();
      await page.keyboard.type(EMAIL);
      await page.getByLabel('Password').click();
      await page.keyboard.type(PASSWORD);
      const consentLoaded = page.waitForResponse((response) => /\/oauth\/consent\/[^/?]+$/.test(response.url()) && response.status() === 200);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // The consent screen: who asks, where the answer goes, every scope; only the plain requested ones ticked.
      const consent = await consentLoaded;
      // Its form is answered with a redirect to the agent, which the browser holds to form-action.
      assert.match(consent.headers()['content-security-policy'] ?? '', new RegExp(`form-action 'self' ${agentUrl}; `));
      await page.waitForURL(/\/oauth\/consent\//);
      await page.getByRole('heading', { name: `Allow ${CLIENT_NAME} to use your Till account?` }).waitFor();
      assert.ok((await page.textContent('main'))?.includes(new URL(agentUrl).host));
      const box = (scope: string) => page.getByRole('checkbox', { name: new RegExp(`^${scope}\\b`) });
      const ticked = async () =>
        Object.fromEntries(
          await Promise.all(
            ['settings:read', 'orders:read', 'sessions:write', 'keys:read', 'keys:write', 'refunds:read', 'refunds:write'].map(async (s) => [
              s,
              await box(s).isChecked(),
            ]),
          ),
        );
      assert.deepEqual(await ticked(), {
        'settings:read': true,
        'orders:read': true,
        'sessions:write': false,
        'keys:read': false,
        'keys:write': false,
        'refunds:read': false,
        'refunds:write': false,
      });
      await assertAccessible(page);
      await screenshots(page, 'oauth', 'consent');
      await page.setViewportSize({ width: 1280, height: 900 });

      // The merchant opts in to keys:read by its label, leaves keys:write unticked, and allows.
      await page.locator('label[for="scope-keys-read"]').click();
      assert.equal(await box('keys:read').isChecked(), true);
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(`${agentUrl}/callback?**`);
      await page.getByRole('heading', { name: 'Authorization received' }).waitFor();
      const callback = new URL(page.url());
      assert.equal(callback.searchParams.get('state'), state);
      const code = callback.searchParams.get('code');
      assert.ok(code);

      // The agent exchanges the code: it holds exactly what the merchant ticked.
      const exchanged = await fetch(`${baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: `${agentUrl}/callback`,
          code_verifier: verifier,
          client_id: `${agentUrl}/client.json`,
        }),
      });
      assert.equal(exchanged.status, 200);
      const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string; scope: string };
      assert.ok(tokens.access_token && tokens.refresh_token);
      const scopes = tokens.scope.split(' ');
      assert.ok(scopes.includes('keys:read') && scopes.includes('settings:read') && scopes.includes('orders:read'), tokens.scope);
      assert.ok(!scopes.includes('keys:write'), tokens.scope);

      // The account's old link leads to the dashboard's Developers page, which lists the agent; the merchant revokes it.
      await page.goto(`${baseUrl}/account`);
      await page.getByRole('link', { name: 'Authorized coding agents' }).click();
      await page.waitForURL(`${baseUrl}/dashboard/developers`);
      const row = page.getByRole('row', { name: new RegExp(CLIENT_NAME) });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /keys:read/);
      await assertAccessible(page);
      await screenshots(page, 'oauth', 'coding-agents');
      await page.setViewportSize({ width: 1280, height: 900 });
      await row.getByRole('button', { name: `Revoke ${CLIENT_NAME}` }).click();
      await page.waitForURL(`${baseUrl}/dashboard/developers?revoked=1`);
      await page.getByRole('status').getByText('Access revoked').waitFor();
      assert.equal(await page.getByRole('row', { name: new RegExp(CLIENT_NAME) }).count(), 0);
      await assertAccessible(page);
      await screenshots(page, 'oauth', 'coding-agents-revoked');

      // Its refresh token is worth nothing now.
      const refreshed = await fetch(`${baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: `${agentUrl}/client.json` }),
      });
      assert.equal(refreshed.status, 400);
    } finally {
      await context.close();
    }
  });
  test('a client document with a control character in its name: a page that says what was refused, never a 5xx', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const authorize = new URL('/oauth/authorize', baseUrl);
      for (const [name, value] of Object.entries({
        response_type: 'code',
        client_id: `${agentUrl}/hostile.json`,
        redirect_uri: `${agentUrl}/callback`,
        code_challenge: createHash('sha256').update('verifier').digest('base64url'),
        code_challenge_method: 'S256',
        scope: 'settings:read',
      }))
        authorize.searchParams.set(name, value);
      const response = await page.goto(authorize.toString());
      assert.equal(response?.status(), 400);
      assert.match((await page.locator('body').textContent()) ?? '', /client_name/);
      await assertAccessible(page);
      await screenshots(page, 'oauth', 'client-document-refused');
    } finally {
      await context.close();
    }
  });
});
