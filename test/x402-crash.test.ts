import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../src/config.ts';
import { openDatabase, type DatabaseHandle } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { createMerchant } from '../src/merchants/merchants.ts';
import { createPublicClient, http } from 'viem';
import { sandboxUsdcAbi } from '../src/sandbox/contracts/artifacts.ts';
import { fundViaHttp, sandboxControlsViaHttp } from '../src/sandbox/index.ts';
import { spawnSandbox, type SpawnedSandbox } from '../src/sandbox/spawn.ts';
import { waitFor } from '../src/webhooks/fixtures/wait.ts';
import { describeOnEngine, createTestDatabase, engines, startPayingService } from './helpers/harness.ts';
import { nowSeconds, signedXPayment } from './helpers/x402-payer.ts';

const SERVICE = fileURLToPath(new URL('./fixtures/service-process.ts', import.meta.url));
const newAccount = () => privateKeyToAccount(generatePrivateKey());

/** Funding, balances and facilitator statistics of a sandbox in another process, over HTTP. */
function sandboxHandle(spawned: SpawnedSandbox) {
  const client = createPublicClient({ transport: http(spawned.rpcUrl) });
  return {
    usdcAddress: spawned.usdcAddress as Address,
    fund: (address: string, usdc: string) => fundViaHttp(spawned.url, address, usdc),
    balanceOf: (address: Address) => client.readContract({ address: spawned.usdcAddress as Address, abi: sandboxUsdcAbi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>,
    faults: sandboxControlsViaHttp(spawned.url).faults,
  };
}

type Running = { url: string; child: ChildProcessByStdio<null, Readable, Readable>; exited: Promise<NodeJS.Signals | null>; stderr: () => string };

/**
 * The service runs as a child process on a real database, paying through `till sandbox` running
 * in a process of its own (chain and facilitator), and is SIGKILLed at a named point of the money path.
 */
for (const { engine, skip } of engines) {
  describeOnEngine(`x402 settlement survives a crash on ${engine}`, skip, () => {
    let spawned: SpawnedSandbox;
    let sandbox: ReturnType<typeof sandboxHandle>;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let handle: DatabaseHandle;
    let env: Record<string, string>;
    let apiKey: string;
    const merchantWallet = newAccount().address;
    const dataDir = mkdtempSync(join(tmpdir(), 'till-crash-'));

    before(async () => {
      spawned = await spawnSandbox({ faultControls: true });
      sandbox = sandboxHandle(spawned);
      database = await createTestDatabase(engine);
      env = {
        ...(process.env as Record<string, string>),
        PORT: '0',
        TILL_DATABASE_URL: database.url,
        TILL_DATA_DIR: dataDir,
        TILL_SECRET_KEY: randomBytes(32).toString('hex'),
        TILL_BASE_URL: 'http://till.test',
        TILL_SANDBOX: 'true',
        TILL_FACILITATOR_URL: spawned.facilitatorUrl,
        TILL_BASE_RPC_URL: spawned.rpcUrl,
        TILL_USDC_ADDRESS: spawned.usdcAddress,
        TILL_SANDBOX_URL: spawned.url,
        TILL_RECONCILE_INTERVAL_MS: '200',
        TILL_RECONCILE_GRACE_MS: '500',
        TILL_LOG_LEVEL: 'silent',
      };
      handle = openDatabase(loadConfig(env));
      await migrateToLatest(handle.db);
      const merchant = await createMerchant(handle.db, { name: 'Crash shop', walletAddress: merchantWallet });
      apiKey = (await createApiKey(handle.db, merchant.id, 'test')).apiKey;
    });
    after(async () => {
      await handle?.close();
      await database?.drop();
      await spawned?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    async function startService(killPoint?: string): Promise<Running> {
      const child = spawn(process.execPath, [SERVICE], { env: { ...env, TILL_TEST_KILL_POINT: killPoint ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const line = out.split('\n').find((l) => l.startsWith('{'));
          if (line) resolve((JSON.parse(line) as { url: string }).url);
        });
        void exited.then(() => reject(new Error(`service exited before listening: ${stderr}`)));
      });
      return { url, child, exited, stderr: () => stderr };
    }

    async function stopService(running: Running) {
      running.child.kill('SIGTERM');
      await running.exited;
    }

    async function openSession(url: string) {
      const created = await fetch(`${url}/api/checkout/v2/payment_session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey }, body: JSON.stringify({ amount: 0.05, currency: 'USD' }) });
      assert.equal(created.status, 201);
      const { sessionId } = (await created.json()) as { sessionId: string };
      const challenge = await fetch(`${url}/x402/session/${sessionId}`);
      assert.equal(challenge.status, 402);
      const [offer] = (await challenge.json()).accepts;
      return { sessionId, value: BigInt(offer.maxAmountRequired), payTo: offer.payTo as Address };
    }

    const paymentOf = (sessionId: string) => handle.db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).execute();
    const eventTypes = async (sessionId: string) => (await handle.db.selectFrom('webhook_events').select('type').where('session_id', '=', sessionId).execute()).map((e) => e.type).sort();

    test('killed after the facilitator settled but before the result was recorded: SUCCESS with the tx hash after restart, never a second transfer', async () => {
      const first = await startService('x402:after-settle');
      const { sessionId, value, payTo } = await openSession(first.url);
      const payer = newAccount();
      await sandbox.fund(payer.address, '1');
      const settledBefore = (await sandbox.faults.get()).stats.settledTransactions.length;
      const proof = await signedXPayment(payer, sandbox.usdcAddress, payTo, value);
      await assert.rejects(fetch(`${first.url}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } }), 'the buyer sees the connection drop');
      assert.equal(await first.exited, 'SIGKILL');
      assert.match(first.stderr(), /killed:x402:after-settle/);
      const [claimed] = await paymentOf(sessionId);
      assert.equal(claimed?.status, 'PENDING', 'the claim survived the crash, the outcome did not');

      const second = await startService();
      try {
        const settled = await waitFor(async () => (await paymentOf(sessionId)).find((p) => p.status === 'SUCCESS'), 'the reconciler to record the settlement');
        const { stats } = await sandbox.faults.get();
        assert.equal(stats.settledTransactions.length, settledBefore + 1, 'exactly one settlement on chain');
        assert.equal(settled.tx_hash, stats.settledTransactions.at(-1));
        assert.match(settled.public_order_id ?? '', /^TX-/);
        assert.equal(await sandbox.balanceOf(merchantWallet), value);
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n - value);

        // The buyer retries the same proof: the stored result, and still one transfer.
        const retry = await fetch(`${second.url}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } });
        assert.equal(retry.status, 200);
        assert.equal((await retry.json()).paymentId, settled.public_order_id);
        assert.equal((await sandbox.faults.get()).stats.settledTransactions.length, settledBefore + 1);
        assert.deepEqual(await eventTypes(sessionId), ['payment.pending', 'payment.succeeded']);
        const session = await handle.db.selectFrom('payment_sessions').select(['status', 'payments_in_progress']).where('id', '=', sessionId).executeTakeFirstOrThrow();
        assert.deepEqual({ ...session }, { status: 'SUCCESS', payments_in_progress: 0 });
      } finally {
        await stopService(second);
      }
    });

    test('killed after the claim, before settling: FAILED once validBefore has passed on chain, and the session can be paid again', async () => {
      const first = await startService('x402:after-claim');
      const { sessionId, value, payTo } = await openSession(first.url);
      const payer = newAccount();
      await sandbox.fund(payer.address, '1');
      const proof = await signedXPayment(payer, sandbox.usdcAddress, payTo, value, { validBefore: nowSeconds() + 12n });
      await assert.rejects(fetch(`${first.url}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } }));
      assert.equal(await first.exited, 'SIGKILL');
      assert.match(first.stderr(), /killed:x402:after-claim/);

      const second = await startService();
      try {
        // The retried proof waits (up to 10 s) for the outcome rather than being settled again: it
        // hears payment_in_progress while the authorization could still be used, and its failure
        // once the reconciler has resolved it.
        const meanwhile = await fetch(`${second.url}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } });
        assert.equal(meanwhile.status, 402);
        const { error } = await meanwhile.json();
        assert.ok(error === 'payment_in_progress' || error === 'authorization_expired', error);
        if (error === 'authorization_expired') assert.equal((await paymentOf(sessionId))[0]!.status, 'FAILED', 'an expiry is told only once the chain says so');

        const failed = await waitFor(async () => (await paymentOf(sessionId)).find((p) => p.status === 'FAILED'), 'the reconciler to fail the expired authorization', 40_000);
        assert.equal(failed.failure_reason, 'authorization_expired');
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n, 'nothing was taken');
        assert.deepEqual(await eventTypes(sessionId), ['payment.failed', 'payment.pending']);

        // The session is open again; a fresh authorization pays it.
        const fresh = await signedXPayment(payer, sandbox.usdcAddress, payTo, value);
        const paid = await fetch(`${second.url}/x402/session/${sessionId}`, { headers: { 'x-payment': fresh.header } });
        assert.equal(paid.status, 200, JSON.stringify(await paid.clone().json()));
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n - value);
      } finally {
        await stopService(second);
      }
    });
  });

  describeOnEngine(`x402 settlement whose answer is lost on ${engine}`, skip, () => {
    let paying: Awaited<ReturnType<typeof startPayingService>>;
    let apiKey: string;
    const merchantWallet = newAccount().address;
    before(async () => {
      paying = await startPayingService(engine, { TILL_RECONCILE_INTERVAL_MS: '200', TILL_RECONCILE_GRACE_MS: '0' }, { faultControls: true, workers: true });
      apiKey = (await paying.service.merchant({ walletAddress: merchantWallet })).apiKey;
    });
    after(() => paying?.stop());

    test('the facilitator settles but its answer never arrives: payment_in_progress, then SUCCESS from the chain', async () => {
      const created = await fetch(`${paying.baseUrl}/api/checkout/v2/payment_session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey }, body: JSON.stringify({ amount: 0.07, currency: 'USD' }) });
      const { sessionId } = (await created.json()) as { sessionId: string };
      const [offer] = (await (await fetch(`${paying.baseUrl}/x402/session/${sessionId}`)).json()).accepts;
      const payer = newAccount();
      await paying.sandbox.fund(payer.address, '1');
      const proof = await signedXPayment(payer, paying.sandbox.usdcAddress, offer.payTo, BigInt(offer.maxAmountRequired));
      await paying.sandbox.faults.set({ dropNextSettleResponse: true });

      const lost = await fetch(`${paying.baseUrl}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } });
      assert.equal(lost.status, 402);
      assert.equal((await lost.json()).error, 'payment_in_progress');
      assert.ok(lost.headers.get('retry-after'));

      const db = paying.service.context.db;
      const settled = await waitFor(async () => db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).where('status', '=', 'SUCCESS').executeTakeFirst(), 'the reconciler');
      const { stats } = await paying.sandbox.faults.get();
      assert.equal(stats.droppedSettleResponses, 1);
      assert.equal(settled.tx_hash, stats.settledTransactions.at(-1));
      const again = await fetch(`${paying.baseUrl}/x402/session/${sessionId}`, { headers: { 'x-payment': proof.header } });
      assert.equal(again.status, 200);
      assert.equal((await again.json()).paymentId, settled.public_order_id);
      assert.equal(await paying.sandbox.balanceOf(merchantWallet), BigInt(offer.maxAmountRequired));
    });
  });
}
