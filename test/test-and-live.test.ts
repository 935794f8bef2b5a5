// One deployment serving test and live side by side: the credential decides the mode of every
// request, each mode pays on its own rails (test: a shared sandbox; live: Base through a
// CDP-style hosted facilitator, here the live rehearsal), and nothing of one mode is visible,
// payable or listed in the other.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ExactEvmScheme } from '@x402/evm';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { pino } from 'pino';
import { getAddress } from 'viem';
import { createDemoMerchant } from '../src/cli/serve.ts';
import { BASE_USDC_ADDRESS } from '../src/common/network.ts';
import { loadConfig } from '../src/config.ts';
import { createService } from '../src/main.ts';
import { startSandbox } from '../src/sandbox/index.ts';
import { runNodeScript, type ServingProcess, serveTill } from '../src/testing/child-process.ts';
import { createServiceStorage, sandboxSettings, temporaryDirectories } from '../src/testing/environment.ts';
import { describeOnEngine, engines } from '../src/testing/harness.ts';
import { type HttpsFront, type LiveRehearsal, liveServiceEnv, startLiveRehearsal } from '../src/testing/live-rehearsal.ts';
import { newAccount } from '../src/testing/payer.ts';
import { createSession } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';
import { startReceiver } from '../src/webhooks/fixtures/receiver.ts';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const freshDir = temporaryDirectories('till-test-and-live-');

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

for (const { engine, skip } of engines) {
  describeOnEngine(`test and live side by side in one deployment, on ${engine}`, skip, () => {
    let rehearsal: LiveRehearsal;
    let testChain: Sandbox;
    let front: HttpsFront;
    let till: ServingProcess;
    let drop: () => Promise<void>;
    const keys = { test: '', live: '' };
    let merchantId: string;
    let env: NodeJS.ProcessEnv;
    let sandboxEra: { apiKey: string; sessionId: string };
    let receivers: Record<'test' | 'live', Awaited<ReturnType<typeof startReceiver>>>;
    let liveHooksFront: HttpsFront;
    const paid: Record<'test' | 'live', { sessionId: string; paymentId: string; receipt: string }> = {} as never;
    const wallet = getAddress(newAccount().address);

    const api = (key: string, path: string, init: RequestInit = {}) =>
      rehearsal.fetch(`${front.url}${path}`, { ...init, headers: { 'X-SC-ApiKey': key, 'content-type': 'application/json', ...init.headers } });
    const createLiveOrTestSession = async (key: string, body: Record<string, unknown>) => {
      const response = await api(key, '/api/checkout/v2/payment_session', { method: 'POST', body: JSON.stringify({ currency: 'USD', ...body }) });
      assert.equal(response.status, 201, await response.clone().text());
      return ((await response.json()) as { sessionId: string }).sessionId;
    };
    const offerOf = async (sessionId: string) => {
      const response = await rehearsal.fetch(`${front.url}/x402/session/${sessionId}`);
      return { status: response.status, body: (await response.json()) as { accepts?: { asset: string; network: string; payTo: string }[] } };
    };
    /** A buyer with 1 (fake) USDC on the mode's chain, paying with the x402 v2 client for that mode's token. */
    const payAs = async (mode: 'test' | 'live', sessionId: string) => {
      const account = newAccount();
      const chain = mode === 'live' ? rehearsal.sandbox : testChain;
      await chain.fund(account.address, '1');
      const pay = wrapFetchWithPaymentFromConfig(rehearsal.fetch, {
        schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(account) }],
        spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: chain.usdcAddress }] },
      } as never);
      const answer = await pay(`${front.url}/x402/session/${sessionId}`);
      const body = (await answer.json()) as { status: string; paymentId: string; receipt: string };
      assert.equal(answer.status, 200, JSON.stringify(body));
      return { account, chain, body };
    };

    before(async () => {
      rehearsal = await startLiveRehearsal({ dir: freshDir(), blockIntervalMs: 400 });
      // Test mode's chain: one sandbox, shared as several instances would share it (TILL_SANDBOX_URL).
      testChain = await startSandbox({ blockIntervalMs: 0 });
      const storage = await createServiceStorage(engine);
      drop = storage.drop;
      // The database first served the sandbox alone, as `npm start` leaves it: the demo merchant and an open session.
      const sandboxOnly = await createService(
        loadConfig({ ...storage.settings, ...sandboxSettings(testChain), TILL_LOG_LEVEL: 'silent', PORT: '0', TILL_BASE_URL: 'http://localhost:8080' }),
        { workers: false, log: pino({ level: 'silent' }) },
      );
      try {
        const demo = await createDemoMerchant(sandboxOnly.context.db, storage.settings.TILL_DATA_DIR);
        assert.ok(demo);
        sandboxEra = { apiKey: demo.apiKey, sessionId: await createSession(sandboxOnly, demo.apiKey, { amount: 0.3, currency: 'USD' }) };
      } finally {
        await sandboxOnly.close();
      }
      // Then it goes live, test mode beside it.
      ({ env, front } = await liveServiceEnv(rehearsal, storage.settings));
      env.TILL_MODES = 'test,live';
      env.TILL_SANDBOX_URL = testChain.url;
      // The merchant's receivers run on this machine (live ones behind https): the SSRF guard lets loopback through for this test only.
      env.TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS = 'true';
      const created = await runNodeScript(CLI, ['merchant', 'create', '--name', 'Two-mode shop', '--wallet', wallet, '--json'], { env });
      assert.equal(created.code, 0, created.stderr);
      const made = JSON.parse(created.stdout) as { merchantId: string; apiKey: string };
      merchantId = made.merchantId;
      keys.live = made.apiKey;
      const testKey = await runNodeScript(CLI, ['keys', 'create', '--merchant', merchantId, '--mode', 'test', '--json'], { env });
      assert.equal(testKey.code, 0, testKey.stderr);
      keys.test = (JSON.parse(testKey.stdout) as { apiKey: string }).apiKey;
      const testWallet = await runNodeScript(CLI, ['merchant', 'set-wallet', merchantId, wallet, '--mode', 'test', '--json'], { env });
      assert.equal(testWallet.code, 0, testWallet.stderr);
      // A webhook endpoint per mode: the test one on plain http, the live one https.
      receivers = { test: await startReceiver(), live: await startReceiver() };
      liveHooksFront = await rehearsal.httpsFrontFor(receivers.live.url.replace(/\/hooks$/, ''));
      for (const [mode, url] of [
        ['test', receivers.test.url],
        ['live', `${liveHooksFront.url}/hooks`],
      ] as const) {
        const hook = await runNodeScript(CLI, ['merchant', 'set-webhook', merchantId, '--url', url, '--mode', mode, '--json'], { env });
        assert.equal(hook.code, 0, hook.stderr);
      }
      till = await serveTill(CLI, env);
    });
    after(async () => {
      await till?.stop();
      await Promise.all([receivers?.test.close(), receivers?.live.close()]);
      await testChain?.stop();
      await rehearsal?.stop();
      await drop?.();
    });

    test('going live kept the sandbox’s data as test mode: its key, its open session, payable on the sandbox chain', async () => {
      const read = await api(sandboxEra.apiKey, `/api/checkout/v2/payment_session/${sandboxEra.sessionId}`);
      assert.equal(read.status, 200, await read.clone().text());
      assert.equal(((await read.json()) as { status: string }).status, 'OPEN');
      const paidNow = await payAs('test', sandboxEra.sessionId);
      assert.equal(paidNow.body.status, 'SUCCESS');
    });

    test('the key picks the mode: sk_test_ and sk_live_ keys of one merchant, each session made in its key’s mode', async () => {
      assert.match(keys.test, /^sk_test_/);
      assert.match(keys.live, /^sk_live_/);
      const testSession = await createLiveOrTestSession(keys.test, { amount: 0.25, orderId: 'same-order' });
      // The same orderId is free in the other mode: the modes share nothing.
      const liveSession = await createLiveOrTestSession(keys.live, { amount: 0.25, orderId: 'same-order' });
      const testOffer = await offerOf(testSession);
      const liveOffer = await offerOf(liveSession);
      assert.deepEqual([testOffer.status, liveOffer.status], [402, 402]);
      assert.equal(testOffer.body.accepts?.[0]?.asset.toLowerCase(), testChain.usdcAddress.toLowerCase(), 'test mode offers the sandbox token');
      assert.equal(liveOffer.body.accepts?.[0]?.asset.toLowerCase(), BASE_USDC_ADDRESS.toLowerCase(), "live mode offers Base's USDC");
      assert.notEqual(testChain.usdcAddress.toLowerCase(), BASE_USDC_ADDRESS.toLowerCase());
    });

    test('a test payment settles on the sandbox chain and a live one through the hosted facilitator, in the same process', async () => {
      const settledBefore = rehearsal.stats.facilitator.settle;
      const testSession = await createLiveOrTestSession(keys.test, { amount: 0.1, orderId: 'test-order' });
      const testPaid = await payAs('test', testSession);
      assert.equal(testPaid.body.status, 'SUCCESS');
      assert.equal(await testChain.balanceOf(wallet), 100_000n, 'the merchant got the fake USDC on the sandbox chain');
      assert.equal(rehearsal.stats.facilitator.settle, settledBefore, 'the hosted facilitator never saw the test payment');
      paid.test = { sessionId: testSession, paymentId: testPaid.body.paymentId, receipt: testPaid.body.receipt };

      const liveSession = await createLiveOrTestSession(keys.live, { amount: 0.2, orderId: 'live-order' });
      const livePaid = await payAs('live', liveSession);
      assert.equal(livePaid.body.status, 'SUCCESS');
      assert.equal(await rehearsal.sandbox.balanceOf(wallet), 200_000n, 'the merchant got USDC on the live chain');
      assert.equal(rehearsal.stats.facilitator.settle, settledBefore + 1, 'the live payment went through the hosted facilitator');
      assert.equal(rehearsal.stats.refused, 0);
      paid.live = { sessionId: liveSession, paymentId: livePaid.body.paymentId, receipt: livePaid.body.receipt };
      assert.match(paid.test.receipt, /\/sandbox\/tx\/0x/, "a test payment's transaction is on the sandbox's explorer");
      assert.match(paid.live.receipt, /^https:\/\/basescan\.org\/tx\/0x/, "a live payment's is on Basescan");
    });

    test('each mode reads only its own sessions: the other mode’s are not found, not listed, not changed', async () => {
      for (const [mine, other] of [
        ['test', 'live'],
        ['live', 'test'],
      ] as const) {
        const own = await api(keys[mine], `/api/checkout/v2/payment_session/${paid[mine].sessionId}`);
        assert.equal(own.status, 200);
        assert.equal(((await own.json()) as { status: string }).status, 'SUCCESS');
        const foreign = await api(keys[mine], `/api/checkout/v2/payment_session/${paid[other].sessionId}`);
        assert.equal(foreign.status, 404, `a ${mine} key does not see a ${other} session`);
        const changed = await api(keys[mine], '/api/checkout/v2/payment_session', {
          method: 'PUT',
          body: JSON.stringify({ sessionId: paid[other].sessionId, amount: 9, currency: 'USD' }),
        });
        assert.equal(changed.status, 404);
        const listed = await api(keys[mine], '/api/checkout/v2/payment_session?limit=100');
        assert.equal(listed.status, 200, await listed.clone().text());
        const ids = ((await listed.json()) as { sessions: { sessionId: string }[] }).sessions.map((session) => session.sessionId);
        assert.ok(ids.includes(paid[mine].sessionId));
        assert.ok(!ids.includes(paid[other].sessionId), `the ${mine} list holds no ${other} session`);
      }
    });

    test("each mode's events hold only its own sessions' events, each with the body its webhooks carry", async () => {
      for (const [mine, other] of [
        ['test', 'live'],
        ['live', 'test'],
      ] as const) {
        const listed = await api(keys[mine], '/api/checkout/v2/events?limit=100');
        assert.equal(listed.status, 200, await listed.clone().text());
        const events = ((await listed.json()) as { events: { type: string; paymentSessionId: string | null; body: string }[] }).events;
        const sessions = new Set(events.map((event) => event.paymentSessionId));
        assert.ok(sessions.has(paid[mine].sessionId), `the ${mine} events hold the ${mine} payment's`);
        assert.ok(!sessions.has(paid[other].sessionId), `the ${mine} events hold nothing of the ${other} payment`);
        const succeeded = events.find((event) => event.type === 'payment.succeeded' && event.paymentSessionId === paid[mine].sessionId);
        assert.ok(succeeded);
        assert.equal((JSON.parse(succeeded.body) as { paymentSessionId: string }).paymentSessionId, paid[mine].sessionId);
      }
    });

    test('a client credential acts in its own mode only: its sessions are of its mode, the other mode’s are not found', async () => {
      for (const [mine, other] of [
        ['test', 'live'],
        ['live', 'test'],
      ] as const) {
        const made = await runNodeScript(CLI, ['clients', 'create', '--merchant', merchantId, '--mode', mine, '--json'], { env });
        assert.equal(made.code, 0, made.stderr);
        const client = JSON.parse(made.stdout) as { client_id: string; client_secret: string };
        const token = await rehearsal.fetch(`${front.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...client, audience: `${front.url}/checkout`, grant_type: 'client_credentials' }),
        });
        assert.equal(token.status, 200, await token.clone().text());
        const bearer = { authorization: `Bearer ${((await token.json()) as { access_token: string }).access_token}`, 'content-type': 'application/json' };
        const own = await rehearsal.fetch(`${front.url}/api/checkout/v2/payment_session/${paid[mine].sessionId}`, { headers: bearer });
        assert.equal(own.status, 200);
        const foreign = await rehearsal.fetch(`${front.url}/api/checkout/v2/payment_session/${paid[other].sessionId}`, { headers: bearer });
        assert.equal(foreign.status, 404, `a ${mine} client does not see a ${other} session`);
        const created = await rehearsal.fetch(`${front.url}/api/checkout/v2/payment_session`, {
          method: 'POST',
          headers: bearer,
          body: JSON.stringify({ amount: 1, currency: 'USD' }),
        });
        assert.equal(created.status, 201, await created.clone().text());
        const { sessionId } = (await created.json()) as { sessionId: string };
        assert.equal((await api(keys[mine], `/api/checkout/v2/payment_session/${sessionId}`)).status, 200, `made in ${mine} mode`);
        assert.equal((await api(keys[other], `/api/checkout/v2/payment_session/${sessionId}`)).status, 404);
      }
    });

    test("each mode's webhooks go to its own endpoint only: the test receiver hears of the test payment, the live one of the live payment", async () => {
      const sessionsHeard = (mode: 'test' | 'live') =>
        new Set(receivers[mode].received.map((hook) => (JSON.parse(hook.body) as { paymentSessionId: string }).paymentSessionId));
      await waitFor(() => sessionsHeard('test').has(paid.test.sessionId) && sessionsHeard('live').has(paid.live.sessionId), 'both payments delivered');
      assert.ok(!sessionsHeard('test').has(paid.live.sessionId), 'the test endpoint never hears of a live payment');
      assert.ok(!sessionsHeard('live').has(paid.test.sessionId), 'the live endpoint never hears of a test payment');
      const chainOf = (mode: 'test' | 'live') => new Set(receivers[mode].received.map((hook) => (JSON.parse(hook.body) as { chain: string }).chain));
      assert.deepEqual([...chainOf('live')], ['base']);
    });

    test('receipts are public in both modes, each linking to its own chain’s explorer', async () => {
      for (const mode of ['test', 'live'] as const) {
        const response = await rehearsal.fetch(`${front.url}/checkout/v2/orders/receipt/${paid[mode].paymentId}`, { headers: { accept: 'application/json' } });
        assert.equal(response.status, 200);
        const receipt = (await response.json()) as { paymentSessionId: string; explorerUrl: string };
        assert.equal(receipt.paymentSessionId, paid[mode].sessionId);
        assert.equal(receipt.explorerUrl, paid[mode].receipt);
      }
    });
  });
}
