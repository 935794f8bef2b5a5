// Signing secret rotation with an overlap, as a receiver sees it: after a rotation, deliveries carry
// a v1 signature with the new secret and one with the old (space-separated in webhook-signature)
// until the overlap ends, so the example receiver holding either secret accepts them; then only the
// new one signs. Rotated from the dashboard (overlap chosen there) and with the CLI (--overlap).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { csrfField, signedInMerchant } from '../testing/page-browser.ts';
import { waitFor } from '../testing/wait.ts';
import { sendTestEvent } from './deliveries.ts';
import { getWebhook, setWebhook } from './endpoints.ts';
import { startReceiver } from './fixtures/receiver.ts';
import { startWebhookWorker, type WebhookWorker } from './worker.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const signaturesOf = (header: unknown) => String(header).split(' ');
const verifies = (secret: string, delivery: { headers: Record<string, unknown>; body: string }) => {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

/** docs/examples/webhook-receiver.mjs, listening on a free port; its log lines as they come. */
async function exampleReceiver(env: Record<string, string>) {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [resolve(ROOT, 'docs/examples/webhook-receiver.mjs')], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (text: string) => lines.push(...text.split('\n').filter(Boolean)));
  await waitFor(() => lines.some((line) => line.includes('listening')), 'the example receiver');
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    lines,
    stop: async () => {
      child.kill();
      await once(child, 'exit');
    },
  };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`webhook signing secret rotation on ${engine}`, skip, () => {
    let service: TestService;
    const stops: (() => Promise<void>)[] = [];
    let worker: WebhookWorker | undefined;
    before(async () => {
      service = await startTestService(engine);
      worker = startWebhookWorker(service.context, {
        settings: { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true },
        pollIntervalMs: 50,
      });
    });
    afterEach(async () => {
      for (const stop of stops.splice(0)) await stop();
    });
    after(async () => {
      await worker?.stop();
      await service?.stop();
    });

    const delivered = async (merchantId: string, received: { headers: Record<string, unknown>; body: string }[]) => {
      const { eventId } = await sendTestEvent(service.context.db, 'sandbox', merchantId);
      service.context.webhookWake.notify();
      return waitFor(() => received.find((r) => r.headers['webhook-id'] === eventId), 'the test event');
    };

    test('the dashboard rotates with the overlap chosen: both secrets sign until it ends, then only the new one', async () => {
      const receiver = await startReceiver();
      stops.push(receiver.close);
      const owner = await signedInMerchant(service);
      const before = await setWebhook(service.context.db, service.config.secretKey, owner.merchantId, { url: receiver.url }, 'sandbox');
      const page = await owner.browser.request('GET', '/dashboard/notifications');
      assert.match(page.body, /<input id="wh-overlap" name="overlap" type="number" inputmode="numeric" min="0" max="168" step="1" value="24"/);
      for (const overlap of ['169', '-1', '1.5', 'a day']) {
        const refused = await owner.browser.request('POST', '/dashboard/notifications/rotate', {
          csrf: csrfField(page.body),
          password: owner.password,
          overlap,
        });
        assert.equal(refused.statusCode, 400, overlap);
        assert.match(refused.body, /Old secret signs too for: give a whole number of hours from 0 to 168 \(7 days\)\. Nothing was changed\./);
      }
      assert.equal(
        (await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'))?.signingSecret,
        before.signingSecret,
        'nothing changed',
      );

      const rotated = await owner.browser.request('POST', '/dashboard/notifications/rotate', {
        csrf: csrfField(page.body),
        password: owner.password,
        overlap: '48',
      });
      assert.equal(rotated.statusCode, 200);
      assert.match(rotated.body, /signatures with the new and the old secret for 48 hours/);
      const now = await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox');
      assert.notEqual(now!.signingSecret, before.signingSecret);
      assert.ok(rotated.body.includes(now!.signingSecret), 'the new secret is shown');
      assert.ok(Math.abs(now!.previousSecretUntil! - (Date.now() + 48 * 3_600_000)) < 60_000);
      assert.match((await owner.browser.request('GET', '/dashboard/notifications')).body, /The previous signing secret signs deliveries too until/);

      const during = await delivered(owner.merchantId, receiver.received);
      assert.equal(during.headers['x-webhook-api-key'], now!.webhookKey);
      assert.equal(signaturesOf(during.headers['webhook-signature']).length, 2);
      assert.ok(verifies(now!.signingSecret, during) && verifies(before.signingSecret, during), 'either secret verifies');

      // The overlap ends.
      await service.context.db
        .updateTable('webhook_endpoints')
        .set({ previous_signing_secret_expires_at: Date.now() - 1 })
        .where('merchant_id', '=', owner.merchantId)
        .execute();
      const afterwards = await delivered(owner.merchantId, receiver.received);
      assert.equal(signaturesOf(afterwards.headers['webhook-signature']).length, 1);
      assert.ok(verifies(now!.signingSecret, afterwards) && !verifies(before.signingSecret, afterwards));
    });

    test('the example receiver accepts a delivery with either secret during the overlap, and refuses the old one after', async () => {
      const { merchantId } = await service.merchant();
      const placeholder = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'http://127.0.0.1:9/hooks' }, 'sandbox');
      const rotated = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'http://127.0.0.1:9/hooks', rotate: true }, 'sandbox');
      for (const [secrets, label] of [
        [placeholder.signingSecret, 'the old secret'],
        [rotated.signingSecret, 'the new secret'],
        [`${rotated.signingSecret},${placeholder.signingSecret}`, 'both'],
      ] as const) {
        const example = await exampleReceiver({ WEBHOOK_KEY: `${rotated.webhookKey},${placeholder.webhookKey}`, WEBHOOK_SECRET: secrets });
        stops.push(example.stop);
        await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: example.url }, 'sandbox');
        const { eventId } = await sendTestEvent(service.context.db, 'sandbox', merchantId);
        service.context.webhookWake.notify();
        await waitFor(() => example.lines.some((line) => line.includes('signature verified')), `a delivery verified with ${label}`);
        const status = async () =>
          (await service.context.db.selectFrom('webhook_deliveries').select('status').where('event_id', '=', eventId).executeTakeFirstOrThrow()).status;
        assert.equal(
          await waitFor(async () => ((await status()) === 'PENDING' ? undefined : status()), `the delivery recorded (${label})`),
          'SUCCEEDED',
          label,
        );
      }
      await service.context.db
        .updateTable('webhook_endpoints')
        .set({ previous_signing_secret_expires_at: Date.now() - 1 })
        .where('merchant_id', '=', merchantId)
        .execute();
      const old = await exampleReceiver({ WEBHOOK_KEY: rotated.webhookKey, WEBHOOK_SECRET: placeholder.signingSecret });
      stops.push(old.stop);
      await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: old.url }, 'sandbox');
      await sendTestEvent(service.context.db, 'sandbox', merchantId);
      service.context.webhookWake.notify();
      await waitFor(() => old.lines.some((line) => line.includes('refused a delivery')), 'the old secret refused after the overlap');
    });
  });
}

test('till merchant set-webhook --rotate --overlap HOURS: the overlap is checked, and needs --rotate', () => {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT'));
  const env = { ...clean, TILL_LOG_LEVEL: 'silent', TILL_DATA_DIR: `/tmp/till-rotation-cli-${process.pid}-${Date.now()}` };
  const till = (...args: string[]) => spawnSync(process.execPath, [resolve(ROOT, 'src/cli/main.ts'), ...args], { env, encoding: 'utf8' });
  const { merchantId } = JSON.parse(till('merchant', 'create', '--name', 'Rotating', '--json').stdout);
  const first = JSON.parse(till('merchant', 'set-webhook', merchantId, '--url', 'http://127.0.0.1:9/hooks', '--json').stdout);
  assert.match(till('merchant', 'set-webhook', merchantId, '--url', 'http://127.0.0.1:9/hooks', '--overlap', '12').stderr, /--overlap goes with --rotate/);
  assert.match(
    till('merchant', 'set-webhook', merchantId, '--url', 'http://127.0.0.1:9/hooks', '--rotate', '--overlap', '169').stderr,
    /--overlap: .*from 0 to 168/,
  );
  const rotated = till('merchant', 'set-webhook', merchantId, '--url', 'http://127.0.0.1:9/hooks', '--rotate', '--overlap', '12');
  assert.equal(rotated.status, 0, rotated.stderr);
  assert.match(rotated.stdout, /The previous signing secret also signs deliveries for 12 hours/);
  assert.ok(!rotated.stdout.includes(first.signingSecret), 'the old secret is not printed again');
});
