import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { browserSkip, launchChromium } from '../src/testing/browser.ts';
import { freePort } from '../src/testing/environment.ts';
import { waitFor } from '../src/testing/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');

/** The README's walkthrough blocks (the walkthrough, then the new session for a browser), exactly as a reader copies them. */
function walkthroughBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Walkthrough'), readme.indexOf('\n## ', readme.indexOf('## Walkthrough') + 1));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 2, 'README has the walkthrough block and the new-session block');
  return blocks;
}

/** Collects a child's output and resolves once a pattern appears in it. */
function watch(child: ChildProcess) {
  let output = '';
  const waiters: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const waiter of [...waiters]) {
      const found = output.match(waiter.pattern);
      if (found) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(found);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return {
    output: () => output,
    waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
      const found = output.match(pattern);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${output}`)), timeoutMs);
        waiters.push({
          pattern,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}

/** The service `npm start` runs for the first test, for the second. */
let serving: { port: number; apiKey: string; signInUrl: string; email: string; password: string } | undefined;

const dataDir = mkdtempSync(join(tmpdir(), 'till-walkthrough-'));
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) {
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit');
    // Each was started in a group of its own: stop it with everything it started (the sandbox, the
    // receiver left running in the background), even when the group's leader has already exited.
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // The whole group is gone already.
    }
    await exited;
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

test('README walkthrough: npm start, then the walkthrough block as written pays a session and a local receiver gets the webhook', async () => {
  const [port, sandboxPort, receiverPort] = [await freePort(), await freePort(), await freePort()];
  // Only the settings a newcomer has: none but where to listen and keep data.
  const environment = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT'));
  // The sandbox port is a setting both terminals share, as a reader's default 8545 is.
  const env = { ...environment, TILL_DATA_DIR: dataDir, TILL_LOG_LEVEL: 'warn', TILL_SANDBOX_PORT: String(sandboxPort) };
  const service = spawn('npm', ['start'], { cwd: ROOT, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(service);
  const started = watch(service);
  const [, apiKey] = await started.waitFor(/TEST API key[^:]*: (sk_test_\S+)/, 120_000);
  const [, signInUrl, email, password] = await started.waitFor(/Sign in at (\S+) as (\S+) with password \(shown once\): (\S+)/, 120_000);
  await started.waitFor(/Till is serving on/, 120_000);
  serving = { port, apiKey: apiKey!, signInUrl: signInUrl!, email: email!, password: password! };

  // The demo merchant's user signs in with what was printed.
  const form = await fetch(signInUrl!);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const signedIn = await fetch(signInUrl!, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: String(form.headers.get('set-cookie')).split(';')[0]! },
    body: new URLSearchParams({ csrf, email: email!, password: password! }),
  });
  assert.equal(signedIn.status, 303);
  assert.equal(signedIn.headers.get('location'), '/dashboard');
  const cookie = signedIn.headers
    .getSetCookie()
    .map((header) => header.split(';')[0]!)
    .join('; ');
  const dashboard = async (path: string) => {
    const answer = await fetch(`${new URL(signInUrl!).origin}${path}`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(answer.status, 200, path);
    return answer.text();
  };

  // The documented substitutions: the printed key, and free ports for the service and the receiver.
  const [block] = walkthroughBlocks() as [string];
  assert.ok(block.includes('sk_test_…') && block.includes('localhost:8080') && block.includes('3000'));
  const script = block.replaceAll('sk_test_…', apiKey!).replaceAll('localhost:8080', `localhost:${port}`).replaceAll('3000', String(receiverPort));
  const walk = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(walk);
  const walked = watch(walk);
  const [code] = (await once(walk, 'exit')) as [number | null];
  assert.equal(code, 0, walked.output());

  const output = walked.output();
  assert.match(output, /"x402Version":2,"error":"payment_required"/);
  assert.match(output, /"maxAmountRequired":"12500000"/);
  const [, sessionId] = output.match(/^200 \{"status":"SUCCESS","paymentSessionId":"(ps_[\w-]+)"/m) ?? [];
  assert.ok(sessionId, output);
  assert.match(output, new RegExp(`"sessionId":"${sessionId}".*"status":"SUCCESS"`));
  assert.match(output, /"transactionHash":"0x[0-9a-f]{64}"/);
  await walked.waitFor(new RegExp(`received payment\\.succeeded for ${sessionId} \\(order order-1001, status SUCCESS\\), signature verified`), 30_000);
  assert.doesNotMatch(walked.output(), /refused a delivery/);

  // Step 7, in prose after the block: signed in as printed, the dashboard shows the paid order on
  // Orders, and on Notifications the session among the API's orders and its delivered webhook.
  const orders = await dashboard('/dashboard/orders');
  assert.ok(orders.includes('order-1001') && orders.includes(sessionId), 'Orders lists the walkthrough’s order');
  const deliveredTag = /<code>payment\.succeeded<\/code> <span class="tag tag-granted">Delivered<\/span>/;
  const notifications = await waitFor(async () => {
    const page = await dashboard('/dashboard/notifications');
    return deliveredTag.test(page) && page;
  }, 'Notifications to show the payment.succeeded delivery as Delivered');
  assert.match(notifications, /HTTP <strong>200<\/strong>/);
  assert.ok(notifications.includes(`<td data-label="Session"><code>${sessionId}</code></td>`), 'Notifications lists the session received through the API');
});

test("README walkthrough in a browser: a new session's redirectUrl is paid with the sandbox wallet", { skip: browserSkip }, async () => {
  assert.ok(serving, 'the service of the first test is running');
  // The new-session block as written, with the two variables the walkthrough's terminal holds.
  const [, newSession] = walkthroughBlocks() as [string, string];
  const made = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', newSession], {
    cwd: ROOT,
    env: { ...process.env, TILL: `http://localhost:${serving.port}`, KEY: serving.apiKey },
    encoding: 'utf8',
  });
  assert.equal(made.status, 0, made.stderr);
  const redirectUrl = made.stdout.trim();
  assert.match(redirectUrl, /^http:\/\/localhost:\d+\/checkout\/pay\?uid=ps_/);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.route('https://shop.example/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Shop</title>' }));
    await page.goto(redirectUrl);
    await page.getByRole('button', { name: /Pay with Sandbox wallet/ }).click();
    await page.waitForURL('https://shop.example/thanks?**', { timeout: 60_000 });
    assert.match(page.url(), /paymentSessionId=ps_[\w-]+&publicOrderId=TX-[0-9A-F]{32}$/);
  } finally {
    await browser.close();
  }
});

test('README walkthrough, step 8 in a browser with no wallet extension: the order of step 5 is refunded in part with the sandbox demo payout wallet', {
  skip: browserSkip,
}, async () => {
  assert.ok(serving, 'the service of the first test is running');
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const [, amount] = /8\. Refund part of it: click \*\*Refund\*\* beside `order-1001` in Orders, enter an amount such as\s+`([\d.]+)`/.exec(readme) ?? [];
  assert.ok(amount, 'README step 8 names the amount to refund');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(serving.signInUrl);
    await page.getByLabel('Email').fill(serving.email);
    await page.getByLabel('Password').fill(serving.password);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/dashboard$/);
    await page.goto(new URL('/dashboard/orders', serving.signInUrl).toString());
    const row = page.locator('table.orders tbody tr', { hasText: 'order-1001' });
    await row.getByRole('link', { name: 'Refund' }).click();
    await page.waitForURL(/#refund$/);
    await page.getByText('Signing with Sandbox demo payout wallet (test USDC, no extension).').waitFor();
    await page.getByLabel('Amount (USDC)').fill(amount!);
    await page.getByRole('button', { name: 'Sign with the payout wallet and refund' }).click();
    await page.waitForURL(/refund=rf_/);
    const receipt = await page.locator('table.orders tbody tr').first().getByRole('link', { name: /^TX-/ }).getAttribute('href');
    // The chain confirms the refund within a few blocks; Orders and the receipt then say so.
    await waitFor(
      async () => {
        await page.goto(new URL(receipt!, serving!.signInUrl).toString());
        return /Partially refunded/.test((await page.locator('.receipt-total').textContent()) ?? '');
      },
      'the receipt of order-1001 to say Partially refunded',
      60_000,
    );
    await page.goto(new URL('/dashboard/orders?q=order-1001', serving.signInUrl).toString());
    assert.match((await page.locator('table.orders tbody tr').first().textContent()) ?? '', /Partially refunded/);
  } finally {
    await browser.close();
  }
});
