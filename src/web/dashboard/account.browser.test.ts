// The account page after an intrusion, in Debian's Chromium: the merchant changes the password with
// "revoke every coding agent" ticked (the default), sees the API keys an agent made with the old
// password, and revokes one. axe-core on the page; phone (390x844) and desktop (1280x800)
// screenshots under artifacts/dashboard/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../accounts/users.ts';
import { authorizedAgent, callMcpTool } from '../../testing/agent.ts';
import { ARTIFACTS, assertAccessible, browserSkip, launchChromium, typeInto } from '../../testing/browser.ts';
import { startListeningTestService, type TestService } from '../../testing/harness.ts';

const EMAIL = 'owner@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a brand new passphrase here';

async function phoneAndDesktop(page: Page, name: string): Promise<void> {
  const dir = join(ARTIFACTS, 'dashboard');
  mkdirSync(dir, { recursive: true });
  for (const [width, height] of [
    [390, 844],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: join(dir, `${name}-${width}x${height}.png`), fullPage: true });
  }
}

describe('the account page in Chromium', { skip: browserSkip }, () => {
  let service: TestService & { baseUrl: string };
  let browser: Browser;
  let merchantId: string;

  before(async () => {
    [service, browser] = await Promise.all([startListeningTestService('sqlite'), launchChromium()]);
    ({ merchantId } = await service.merchant());
    await createUser(service.context.db, { merchantId, email: EMAIL, password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  test('change the password revoking every agent, then revoke the key an agent made', async () => {
    const agent = await authorizedAgent(service.context, merchantId, ['keys:write'], 'https://helper.agent.example/oauth/client.json');
    const made = await callMcpTool(service.app, agent.accessToken, 'create_api_key');
    const agentKey = made.body.result.structuredContent as { masked: string };
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    try {
      await page.goto(`${service.baseUrl}/dashboard/account`);
      await typeInto(page, 'Email', EMAIL);
      await typeInto(page, 'Password', PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${service.baseUrl}/dashboard/account`);

      const revokeAgents = page.getByRole('checkbox', { name: /Also revoke every coding agent's access \(1 authorized\)/ });
      assert.equal(await revokeAgents.isChecked(), true, 'ticked by default');
      await assertAccessible(page);
      await phoneAndDesktop(page, 'account-before-password-change');
      await page.setViewportSize({ width: 1280, height: 800 });

      await typeInto(page, 'Current password', PASSWORD);
      await typeInto(page, 'New password', NEW_PASSWORD);
      await typeInto(page, 'New password again', NEW_PASSWORD);
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('1 coding agent lost its access').waitFor();
      const keys = page.getByRole('table');
      assert.match((await keys.textContent()) ?? '', new RegExp(`${agentKey.masked}[\\s\\S]*helper\\.agent\\.example`));
      assert.equal((await callMcpTool(service.app, agent.accessToken, 'list_api_keys')).status, 401, 'the agent is refused');
      await assertAccessible(page);
      await phoneAndDesktop(page, 'account-password-changed');
      await page.setViewportSize({ width: 1280, height: 800 });

      await page.getByRole('button', { name: `Revoke the key ending ${agentKey.masked.slice(1)}` }).click();
      await page.getByText('API key revoked').waitFor();
      assert.equal(await page.getByRole('table').count(), 0, 'no agent key left');
    } finally {
      await context.close();
    }
  });
});
