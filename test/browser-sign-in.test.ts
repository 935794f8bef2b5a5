// A person signs in and out with clicks in a real browser (playwright-core driving the system's
// Chromium); axe checks the pages; screenshots go to test-artifacts/ (or TILL_TEST_ARTIFACTS).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createUser } from '../src/accounts/users.ts';
import { freePort } from '../src/testing/environment.ts';
import { startTestService, type TestService } from '../src/testing/harness.ts';

const CHROMIUM = process.env.TILL_TEST_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
const ARTIFACTS = resolve(process.env.TILL_TEST_ARTIFACTS ?? join(import.meta.dirname, '..', 'test-artifacts'));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const skip = CHROMIUM ? false : 'no Chromium found (install the chromium Debian package or set TILL_TEST_CHROMIUM)';

let service: TestService;
let browser: Browser;
let base: string;
before(async () => {
  if (skip) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = await startTestService('sqlite', { TILL_BASE_URL: base });
  await service.app.listen({ port, host: '127.0.0.1' });
  browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
});
after(async () => {
  await browser?.close();
  await service?.stop();
});

/** Serious and critical axe violations of the page, as "rule: target" lines. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const results = await page.evaluate(async () =>
    (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe.run(),
  );
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

test('sign-in, a wrong password, and sign-out, by clicks; no serious or critical axe violation', { skip }, async () => {
  const { merchantId } = await service.merchant();
  await createUser(service.context.db, { merchantId, email: 'clicks@shop.example', password: 'a password typed by hand' });
  // The pages forbid inline scripts; axe is injected as one, so this context alone bypasses the policy.
  const context = await browser.newContext({ bypassCSP: true });
  const page = await context.newPage();

  await page.goto(`${base}/account`);
  assert.equal(new URL(page.url()).pathname, '/sign-in');
  await page.screenshot({ path: join(ARTIFACTS, 'sign-in.png'), fullPage: true });
  assert.deepEqual(await axeViolations(page), []);

  await page.getByLabel('Email').fill('clicks@shop.example');
  await page.getByLabel('Password').fill('not the password at all');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  assert.equal(await page.getByRole('alert').textContent(), 'The email or password is not right.');
  await page.screenshot({ path: join(ARTIFACTS, 'sign-in-refused.png'), fullPage: true });
  assert.deepEqual(await axeViolations(page), []);

  await page.getByLabel('Password').fill('a password typed by hand');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/account`);
  assert.match((await page.textContent('main')) ?? '', /signed in as clicks@shop\.example/);
  const cookies = await context.cookies();
  const session = cookies.find((cookie) => cookie.name === 'till_session');
  assert.ok(session?.httpOnly && session.sameSite === 'Lax');
  await page.screenshot({ path: join(ARTIFACTS, 'account.png'), fullPage: true });
  assert.deepEqual(await axeViolations(page), []);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/sign-in`);
  await page.goto(`${base}/account`);
  assert.equal(new URL(page.url()).pathname, '/sign-in');
  await context.close();
});
