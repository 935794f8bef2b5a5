import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { createServiceStorage, sandboxOverHttp, sandboxSettings } from '../src/testing/environment.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { newAccount, nowSeconds, signedXPayment } from '../src/testing/payer.ts';
import { challenge, createMerchant, createSession, fundedPayer, pay } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';
import { startService, stopService } from './fixtures/crashable-service.ts';

/**
 * The service runs as a child process on a real database, paying through `till sandbox` running
 * in a process of its own (chain and facilitator), and is SIGKILLed at a named point of the money path.
 */
for (const { engine, skip } of engines) {
  describeOnEngine(`x402 settlement survives a crash on ${engine}`, skip, () => {
    let spawned: SpawnedSandbox;
    let sandbox: ReturnType<typeof sandboxOverHttp>;
    let storage: Awaited<ReturnType<typeof createServiceStorage>>;
    let handle: DatabaseHandle;
    let env: Record<string, string>;
    let apiKey: string;
    const merchantWallet = newAccount().address;

    before(async () => {
      spawned = await spawnSandbox({ faultControls: true });
      sandbox = sandboxOverHttp(spawned);
      storage = await createServiceStorage(engine, { prefix: 'till-crash-' });
      env = {
        ...(process.env as Record<string, string>),
        PORT: '0',
        ...storage.settings,
        TILL_BASE_URL: 'http://till.test',
        ...sandboxSettings(spawned),
        TILL_RECONCILE_INTERVAL_MS: '200',
        TILL_RECONCILE_GRACE_MS: '500',
        TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '500',
        TILL_LOG_LEVEL: 'silent',
      };
      handle = openDatabase(loadConfig(env));
      await migrateToLatest(handle.db);
      ({ apiKey } = await createMerchant(handle.db, { name: 'Crash shop', walletAddress: merchantWallet }));
    });
    after(async () => {
      await handle?.close();
      await storage?.drop();
      await spawned?.stop();
    });

    async function openSession(url: string) {
      const sessionId = await createSession(url, apiKey, { amount: 0.05, currency: 'USD' });
      const { value, payTo } = await challenge(url, sessionId);
      return { sessionId, value, payTo };
    }

    const paymentOf = (sessionId: string) => handle.db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).execute();
    const eventTypes = async (sessionId: string) =>
      (await handle.db.selectFrom('webhook_events').select('type').where('session_id', '=', sessionId).execute()).map((e) => e.type).sort();

    test('killed after the facilitator settled but before the result was recorded: SUCCESS with the tx hash after restart, never a second transfer', async () => {
      const first = await startService(env, 'x402:after-settle');
      const { sessionId, value, payTo } = await openSession(first.url);
      const payer = await fundedPayer(sandbox);
      const settledBefore = (await sandbox.faults.get()).stats.settledTransactions.length;
      const proof = await signedXPayment(payer, sandbox.usdcAddress, payTo, value);
      await assert.rejects(pay(first.url, sessionId, proof.header), 'the buyer sees the connection drop');
      assert.equal(await first.exited, 'SIGKILL');
      assert.match(first.stderr(), /killed:x402:after-settle/);
      const [claimed] = await paymentOf(sessionId);
      assert.equal(claimed?.status, 'PENDING', 'the claim survived the crash, the outcome did not');

      const second = await startService(env);
      try {
        const settled = await waitFor(async () => (await paymentOf(sessionId)).find((p) => p.status === 'SUCCESS'), 'the reconciler to record the settlement');
        const { stats } = await sandbox.faults.get();
        assert.equal(stats.settledTransactions.length, settledBefore + 1, 'exactly one settlement on chain');
        assert.equal(settled.tx_hash, stats.settledTransactions.at(-1));
        assert.match(settled.public_order_id ?? '', /^TX-/);
        assert.equal(await sandbox.balanceOf(merchantWallet), value);
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n - value);

        // The buyer retries the same proof: the stored result, and still one transfer.
        const retry = await pay(second.url, sessionId, proof.header);
        assert.equal(retry.status, 200);
        assert.equal((await retry.json()).paymentId, settled.public_order_id);
        assert.equal((await sandbox.faults.get()).stats.settledTransactions.length, settledBefore + 1);
        assert.deepEqual(await eventTypes(sessionId), ['payment.pending', 'payment.succeeded']);
        const session = await handle.db
          .selectFrom('payment_sessions')
          .select(['status', 'payments_in_progress'])
          .where('id', '=', sessionId)
          .executeTakeFirstOrThrow();
        assert.deepEqual({ ...session }, { status: 'SUCCESS', payments_in_progress: 0 });
      } finally {
        await stopService(second);
      }
    });

    test('killed after the claim, before settling: FAILED once validBefore has passed on chain, and the session can be paid again', async () => {
      const first = await startService(env, 'x402:after-claim');
      const { sessionId, value, payTo } = await openSession(first.url);
      const payer = await fundedPayer(sandbox);
      const proof = await signedXPayment(payer, sandbox.usdcAddress, payTo, value, { validBefore: nowSeconds() + 12n });
      await assert.rejects(pay(first.url, sessionId, proof.header));
      assert.equal(await first.exited, 'SIGKILL');
      assert.match(first.stderr(), /killed:x402:after-claim/);

      const second = await startService(env);
      try {
        // The retried proof waits (up to 10 s) for the outcome rather than being settled again: it
        // hears payment_in_progress while the authorization could still be used, and its failure
        // once the reconciler has resolved it.
        const meanwhile = await pay(second.url, sessionId, proof.header);
        assert.equal(meanwhile.status, 402);
        const { error } = await meanwhile.json();
        assert.ok(error === 'payment_in_progress' || error === 'authorization_expired', error);
        if (error === 'authorization_expired') assert.equal((await paymentOf(sessionId))[0]!.status, 'FAILED', 'an expiry is told only once the chain says so');

        const failed = await waitFor(
          async () => (await paymentOf(sessionId)).find((p) => p.status === 'FAILED'),
          'the reconciler to fail the expired authorization',
          40_000,
        );
        assert.equal(failed.failure_reason, 'authorization_expired');
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n, 'nothing was taken');
        assert.deepEqual(await eventTypes(sessionId), ['payment.failed', 'payment.pending']);

        // The session is open again; a fresh authorization pays it.
        const fresh = await signedXPayment(payer, sandbox.usdcAddress, payTo, value);
        const paid = await pay(second.url, sessionId, fresh.header);
        assert.equal(paid.status, 200, JSON.stringify(await paid.clone().json()));
        assert.equal(await sandbox.balanceOf(payer.address), 1_000_000n - value);
      } finally {
        await stopService(second);
      }
    });
  });

  describeOnEngine(`x402 settlement whose answer is lost on ${engine}`, skip, () => {
    let paying: PayingShop;
    let merchantWallet: string;
    before(async () => {
      paying = await startPayingShop(
        engine,
        { TILL_RECONCILE_INTERVAL_MS: '200', TILL_RECONCILE_GRACE_MS: '500', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '500' },
        { faultControls: true, workers: true },
      );
      merchantWallet = paying.merchantWallet;
    });
    after(() => paying?.stop());

    test('the facilitator settles but its answer never arrives: payment_in_progress, then SUCCESS from the chain', async () => {
      const sessionId = await paying.createSession({ amount: 0.07, currency: 'USD' });
      const offer = await paying.challenge(sessionId);
      const payer = await paying.fundedPayer();
      const proof = await paying.signedPayment(payer, offer);
      await paying.sandbox.faults.set({ dropNextSettleResponse: true });

      const lost = await paying.pay(sessionId, proof.header);
      assert.equal(lost.status, 402);
      assert.equal((await lost.json()).error, 'payment_in_progress');
      assert.ok(lost.headers.get('retry-after'));

      const db = paying.service.context.db;
      const settled = await waitFor(
        async () => db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).where('status', '=', 'SUCCESS').executeTakeFirst(),
        'the reconciler',
      );
      const { stats } = await paying.sandbox.faults.get();
      assert.equal(stats.droppedSettleResponses, 1);
      assert.equal(settled.tx_hash, stats.settledTransactions.at(-1));
      const again = await paying.pay(sessionId, proof.header);
      assert.equal(again.status, 200);
      assert.equal((await again.json()).paymentId, settled.public_order_id);
      assert.equal(await paying.sandbox.balanceOf(merchantWallet), BigInt(offer.maxAmountRequired));
    });
  });
}
