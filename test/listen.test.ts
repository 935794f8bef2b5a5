// `till listen`, run as the CLI in a process of its own, follows a Till through its events API and
// forwards to a local receiver; Till is cut off twice while it follows, and the listener is stopped
// and started again on its state file: every event arrives once, in order, signed with its secret.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../src/testing/harness.ts';
import { createSession } from '../src/testing/shop.ts';
import { startTcpProxy, type TcpProxy } from '../src/testing/tcp-proxy.ts';
import { waitFor } from '../src/testing/wait.ts';
import type { WebhookEventType } from '../src/webhooks/event-types.ts';
import { enqueueWebhookEvent, type WebhookSession } from '../src/webhooks/events.ts';
import { startReceiver } from '../src/webhooks/fixtures/receiver.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');
const TYPES: WebhookEventType[] = ['payment.pending', 'payment.succeeded', 'payment.failed', 'session.expired'];
const PAYMENT = { id: 'pay_1', amount_minor: 500n, currency: 'USD', public_order_id: 'TX-0123456789ABCDEF0123456789ABCDEF', tx_hash: '0xfeed' };

/** A `till listen` process and what it printed. */
type Listener = { child: ChildProcess; stdout: string; stderr: string; stop(): Promise<void> };

function startListener(args: string[], env: NodeJS.ProcessEnv): Listener {
  // From a folder of its own: no .env of the repository is read.
  const child = spawn(process.execPath, [CLI, 'listen', ...args], { env, cwd: mkdtempSync(join(tmpdir(), 'till-listen-')), stdio: ['ignore', 'pipe', 'pipe'] });
  const listener: Listener = {
    child,
    stdout: '',
    stderr: '',
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
  child.stdout!.on('data', (chunk) => {
    listener.stdout += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    listener.stderr += chunk;
  });
  return listener;
}

for (const { engine, skip } of engines) {
  describeOnEngine(`till listen on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let proxy: TcpProxy;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const listeners: Listener[] = [];

    before(async () => {
      service = await startListeningTestService(engine);
      proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port) });
      receiver = await startReceiver();
    });
    after(async () => {
      for (const listener of listeners) await listener.stop();
      await receiver?.close();
      await proxy?.close();
      await service?.stop();
    });

    test('forwards 500 events across two outages of Till and a restart of its own: every event once, in order, signed', async () => {
      const { apiKey } = await service.merchant();
      const sessionId = await createSession(service, apiKey, { amount: 5, currency: 'USD', orderId: 'listen-1' });
      const session: WebhookSession = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      const written: string[] = [];
      /** Events of the session, each in a millisecond of its own, so that their order is the order they were written in. */
      const write = async (count: number) => {
        for (let index = 0; index < count; index++) {
          const last = Date.now();
          while (Date.now() === last) await new Promise((resolve) => setImmediate(resolve));
          const type = TYPES[written.length % TYPES.length]!;
          const { eventId } = await service.context.db.transaction().execute((trx) =>
            enqueueWebhookEvent(trx, {
              type,
              session,
              ...(type === 'session.expired' ? {} : { payment: PAYMENT }),
              occurredAt: Date.now(),
              explorerTxUrl: service.config.explorerTxUrl,
              network: 'base',
            }),
          );
          written.push(eventId);
        }
      };
      // Written before the listener starts: not forwarded, as it starts from now.
      await write(3);
      const before = new Set(written);

      const statePath = join(mkdtempSync(join(tmpdir(), 'till-listen-state-')), 'listen.json');
      const args = ['--forward-to', receiver.url, '--till', `http://127.0.0.1:${proxy.port}`, '--interval', '100', '--state', statePath];
      const env = { ...process.env, TILL_API_KEY: apiKey };
      const first = startListener(args, env);
      listeners.push(first);
      await waitFor(() => first.stderr.includes('Ready:'), `the listener to start: ${first.stderr}`);
      const secret = /Signing secret[^:]*: (whsec_\S+)/.exec(first.stderr)?.[1];
      assert.ok(secret, first.stderr);
      const received = () => receiver.received.length;

      // Outage 1: Till cut off (open connections reset, new ones refused) while events keep being written.
      await write(150);
      await waitFor(() => received() >= 50 && received(), 'the first forwards');
      const refusedBefore = proxy.refused;
      proxy.cut();
      await write(100);
      await waitFor(() => proxy.refused >= refusedBefore + 3, 'the listener to try Till three times while it is cut off');
      proxy.restore();
      await waitFor(() => received() >= 250 && received(), 'the listener to catch up after the first outage', 60_000);

      // Outage 2: cut off again in the middle of a burst.
      const writing = write(150);
      await waitFor(() => received() >= 300 && received(), 'forwards of the burst');
      const refusedMid = proxy.refused;
      proxy.cut();
      await writing;
      await waitFor(() => proxy.refused >= refusedMid + 3, 'the listener to try Till three times during the second outage');
      proxy.restore();
      await waitFor(() => received() >= 400 && received(), 'the listener to catch up after the second outage', 60_000);

      // Stopped and started again on its state file: it goes on where it was, with the same secret.
      await first.stop();
      assert.equal(first.child.exitCode, 0, first.stderr);
      await write(100);
      const second = startListener(args, env);
      listeners.push(second);
      await waitFor(() => second.stderr.includes('Ready:'), `the listener to start again: ${second.stderr}`);
      assert.ok(second.stderr.includes(secret), 'the state file keeps the signing secret');
      await waitFor(() => received() >= 500 && received(), 'all 500 events', 60_000);
      // One more, and its arrival shows the listener went on past every other without sending one twice.
      await write(1);
      await waitFor(() => received() >= 501 && received(), 'the last event');

      const forwarded = receiver.received.map((delivery) => JSON.parse(delivery.body).id as string);
      assert.equal(forwarded.length, 501, 'no event sent twice');
      assert.deepEqual(
        forwarded,
        written.filter((id) => !before.has(id)),
        'every event written after the start, once, in the order written',
      );
      const rows = await service.context.db.selectFrom('webhook_events').select(['id', 'body']).where('id', 'in', forwarded).execute();
      const bodies = new Map(rows.map((row) => [row.id, row.body]));
      const verifier = new Webhook(secret);
      for (const delivery of receiver.received) {
        const id = String(delivery.headers['webhook-id']);
        assert.equal(delivery.body, bodies.get(id), 'the body Till stored, byte for byte');
        verifier.verify(delivery.body, delivery.headers as Record<string, string>);
        assert.ok(String(delivery.headers['x-webhook-api-key']).startsWith('whk_'));
      }
      // One line per event, with the receiver's status.
      // The receiver has the last event before the listener has its answer and prints its line.
      const lines = await waitFor(() => {
        const printed = `${first.stdout}${second.stdout}`.trim().split('\n');
        return printed.length >= 501 && printed;
      }, 'a line for the last event');
      assert.equal(lines.length, 501);
      assert.match(lines[0]!, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  \\S+ +${forwarded[0]}  \\[200\\]$`));
      assert.ok(first.stderr.includes('Till is unreachable'), first.stderr);
      assert.ok(first.stderr.includes('Till answers again'), first.stderr);
    });

    test('till trigger makes a test event the events API lists; a live key and a wrong key are refused with a message', async () => {
      const { merchantId, apiKey } = await service.merchant();
      const env = { ...process.env, TILL_API_KEY: apiKey, TILL_URL: service.baseUrl };
      const run = (args: string[], extra: NodeJS.ProcessEnv = {}) => runNodeScript(CLI, args, { env: { ...env, ...extra } });
      const triggered = await run(['trigger', 'refund.succeeded', '--json']);
      assert.equal(triggered.code, 0, triggered.stderr);
      const { event } = JSON.parse(triggered.stdout) as { event: { id: string; type: string; body: string } };
      assert.equal(event.type, 'refund.succeeded');
      const listed = await service.app.inject({ method: 'GET', url: `/api/checkout/v2/events/${event.id}`, headers: { 'x-sc-apikey': apiKey } });
      assert.equal(listed.json().body, event.body);

      const live = (await createApiKey(service.context.db, merchantId, 'live')).apiKey;
      const refused = await run(['trigger', 'payment.succeeded'], { TILL_API_KEY: live });
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /test events only: use an sk_test_ key/);
      const unknownType = await run(['trigger', 'payment.refunded']);
      assert.equal(unknownType.code, 2);
      assert.match(unknownType.stderr, /type is invalid: must be one of payment.succeeded/);
      const wrongKey = await run(['listen', '--forward-to', receiver.url], { TILL_API_KEY: `${apiKey}x` });
      assert.equal(wrongKey.code, 2);
      assert.match(wrongKey.stderr, /refused GET \/api\/checkout\/v2\/events: The API key is not valid/);
    });
  });
}
