import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { setMerchantWallet } from '../src/merchants/merchants.ts';
import { cancelAuthorization, offeredPayment, persistentBuyer, resend, submitAuthorization, transfersOnChain } from '../src/testing/buyer.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { newAccount } from '../src/testing/payer.ts';
import { readSession } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';

/**
 * Money is never charged twice and never stuck, whatever the facilitator answers and however the
 * RPC lags: what a buyer sees in the answers, what the merchant sees through the API, and what the
 * chain's Transfer logs say. The sandbox's fault controls play each bad day.
 */
test('a reconcile grace shorter than the facilitator settle timeout is refused at start, naming the setting', () => {
  assert.throws(() => loadConfig({ TILL_RECONCILE_GRACE_MS: '15000' }), /TILL_RECONCILE_GRACE_MS/);
  assert.throws(() => loadConfig({ TILL_RECONCILE_GRACE_MS: '5000', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '10000' }), /TILL_RECONCILE_GRACE_MS/);
  assert.doesNotThrow(() => loadConfig({ TILL_RECONCILE_GRACE_MS: '12000', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '10000' }));
});

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

type ApiPayment = { status: string; transactionHash: string | null; failureReason: string | null; payer: string; paymentId: string | null };

for (const { engine, skip } of engines) {
  describeOnEngine(`money never charged twice, never stuck, on ${engine}`, skip, () => {
    let env: PayingShop;
    /** Reconciler passes that failed as a whole (the service logs each one). */
    let failedPasses = 0;
    before(async () => {
      env = await startPayingShop(
        engine,
        { TILL_RECONCILE_INTERVAL_MS: '100', TILL_RECONCILE_GRACE_MS: '1500', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '1000' },
        {
          faultControls: true,
          workers: true,
          log: pino(
            { level: 'warn' },
            {
              write(line: string) {
                if (line.includes('"msg":"reconciler pass failed"')) failedPasses++;
              },
            },
          ),
        },
      );
    });
    afterEach(async () => {
      await env.sandbox.faults.set({ settleFault: 'none', rpcLagBlocks: 0, delayVerifyMs: 0, delaySettleMs: 0, dropNextSettleResponse: false });
    });
    after(() => env?.stop());

    const target = () => ({ baseUrl: env.baseUrl, usdcAddress: env.sandbox.usdcAddress });
    const payments = async (sessionId: string): Promise<ApiPayment[]> => {
      const response = await readSession(env.baseUrl, env.apiKey, sessionId);
      assert.equal(response.status, 200);
      return ((await response.json()) as { payments: ApiPayment[] }).payments;
    };
    const settledOf = (sessionId: string) =>
      waitFor(async () => {
        const all = await payments(sessionId);
        return all.length > 0 && all.every((p) => p.status !== 'PENDING') && all;
      }, `every payment of ${sessionId} resolved`);
    const transfersFrom = (payer: string, to: string = env.merchantWallet) =>
      transfersOnChain(env.sandbox.rpcUrl, env.sandbox.usdcAddress, { from: payer, to });
    const succeededEvents = async (sessionId: string) =>
      (
        await env.service.context.db
          .selectFrom('webhook_events')
          .select('type')
          .where('session_id', '=', sessionId)
          .where('type', '=', 'payment.succeeded')
          .execute()
      ).length;

    for (const fault of ['pending', 'error', 'bad_gateway', 'hang'] as const) {
      test(`facilitator settles then answers "${fault}": a persistent buyer of a STATIC link is charged once, the payment ends SUCCESS with the chain's transfer`, async () => {
        const sessionId = await env.createSession({ amount: 0.25, currency: 'USD', orderType: 'STATIC' });
        const payer = await env.fundedPayer('2');
        await env.sandbox.faults.set({ settleFault: fault });
        const { last, signed } = await persistentBuyer(target(), sessionId, payer, { attempts: 3 });
        assert.equal(last.status, 402);
        assert.equal(last.body.error, 'payment_in_progress', 'the buyer is told the payment is being confirmed');
        assert.equal(offeredPayment(last), undefined, 'and is not offered to pay again');
        assert.equal(signed.length, 1, 'so the buyer signed once');
        await env.sandbox.faults.set({ settleFault: 'none' });

        const [transfer, ...more] = await transfersFrom(payer.address);
        assert.equal(more.length, 0, 'one transfer on chain');
        assert.equal(transfer?.value, 250_000n);
        const [payment, ...others] = await settledOf(sessionId);
        assert.equal(others.length, 0);
        assert.equal(payment?.status, 'SUCCESS');
        assert.equal(payment?.transactionHash, transfer!.txHash, "the payment holds the chain's transfer");
        assert.equal(await succeededEvents(sessionId), 1);
        // The same proof again: the stored result, and still one transfer.
        const again = await resend(env.baseUrl, sessionId, signed[0]!.header);
        assert.equal(again.status, 200);
        assert.equal((await transfersFrom(payer.address)).length, 1);
      });
    }

    test('a new proof from a payer whose payment of a STATIC link is PENDING is answered payment_in_progress, charged nothing; once the first is cancelled on chain it pays', async () => {
      const sessionId = await env.createSession({ amount: 0.1, currency: 'USD', orderType: 'STATIC' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ settleFault: 'unavailable' });
      const first = await persistentBuyer(target(), sessionId, payer, { attempts: 1, validForSeconds: 500n });
      assert.equal(first.last.body.error, 'payment_in_progress');
      await env.sandbox.faults.set({ settleFault: 'none' });

      // The same payer signs a new authorization for the link's challenge while the first is PENDING.
      const second = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(second.last.status, 402);
      assert.equal(second.last.body.error, 'payment_in_progress');
      assert.deepEqual(await transfersFrom(payer.address), [], 'nothing charged');

      // The buyer cancels the first authorization on chain: the chain has decided, it FAILED.
      const canceled = await cancelAuthorization(env.sandbox.chain, payer, env.sandbox.usdcAddress, first.signed[0]!.auth.nonce);
      assert.equal(canceled.status, 'success');
      const [failed] = await settledOf(sessionId);
      assert.equal(failed?.status, 'FAILED');
      assert.equal(failed?.failureReason, 'authorization_canceled');

      const third = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(third.last.status, 200);
      assert.equal((await transfersFrom(payer.address)).length, 1);
    });

    test('a TRANSIENT session whose authorization was cancelled is neither stuck nor paid twice: FAILED, then paid by another buyer', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ settleFault: 'unavailable' });
      const first = await persistentBuyer(target(), sessionId, payer, { attempts: 1, validForSeconds: 500n });
      assert.equal(first.last.status, 402);
      await env.sandbox.faults.set({ settleFault: 'none' });
      await cancelAuthorization(env.sandbox.chain, payer, env.sandbox.usdcAddress, first.signed[0]!.auth.nonce);
      const [failed] = await settledOf(sessionId);
      assert.equal(failed?.status, 'FAILED');

      const other = await env.fundedPayer('1');
      const paid = await persistentBuyer(target(), sessionId, other, { attempts: 1 });
      assert.equal(paid.last.status, 200);
      assert.equal((await transfersFrom(other.address)).length, 1);
      assert.equal((await transfersFrom(payer.address)).length, 0);
    });

    test('an authorization used more than 50,000 blocks before the reconciler looks is still found: SUCCESS', async () => {
      const sessionId = await env.createSession({ amount: 0.03, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ dropNextSettleResponse: true });
      const lost = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(lost.last.body.error, 'payment_in_progress', 'the answer was lost: the buyer is told to wait');
      await env.sandbox.chain.mine(60_000);
      const [payment] = await settledOf(sessionId);
      assert.equal(payment?.status, 'SUCCESS');
      assert.equal(payment?.transactionHash, (await transfersFrom(payer.address))[0]?.txHash);
    });

    test('an RPC behind a load balancer with a lagging node never makes a settled payment FAILED', async () => {
      const sessionId = await env.createSession({ amount: 0.02, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ dropNextSettleResponse: true });
      const lost = await persistentBuyer(target(), sessionId, payer, { attempts: 1, validForSeconds: 12n });
      assert.equal(lost.last.body.error, 'payment_in_progress');
      // The settlement is mined; one node of the RPC is 6 blocks behind it, and chain time passes validBefore.
      await env.sandbox.faults.set({ rpcLagBlocks: 6 });
      await env.sandbox.chain.mine(3);
      await env.sandbox.chain.increaseTime(30);
      // Watched until three reconciler passes have run since (two of them wholly with the lag), each one
      // either looking at the payment or failing as a whole, or until the payment is resolved.
      const looks = () =>
        env.service.context.db.selectFrom('payments').select(['status', 'checks']).where('session_id', '=', sessionId).executeTakeFirstOrThrow();
      const passes = async () => Number((await looks()).checks) + failedPasses;
      const passesBefore = await passes();
      const failedBefore = failedPasses;
      const seen = new Set<string>();
      await waitFor(async () => {
        for (const p of await payments(sessionId)) seen.add(p.status);
        const row = await looks();
        seen.add(row.status);
        return row.status !== 'PENDING' || Number(row.checks) + failedPasses >= passesBefore + 3;
      }, 'three reconciler passes while the node lags');
      assert.ok(!seen.has('FAILED'), `the payment was never FAILED (seen: ${[...seen].join(', ')})`);
      assert.equal(failedPasses, failedBefore, 'no reconciler pass failed as a whole while the node lagged: its pin moved back to a block the node has');
      await env.sandbox.faults.set({ rpcLagBlocks: 0 });
      const [payment] = await settledOf(sessionId);
      assert.equal(payment?.status, 'SUCCESS');
      assert.equal((await transfersFrom(payer.address)).length, 1);
    });

    test("a facilitator that answers success with another transaction's hash: the payment ends with the chain's transfer", async () => {
      const sessionId = await env.createSession({ amount: 0.06, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ settleFault: 'wrong_hash' });
      const paid = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(paid.last.status, 200);
      await env.sandbox.faults.set({ settleFault: 'none' });
      const [transfer] = await transfersFrom(payer.address);
      assert.ok(transfer);
      const payment = await waitFor(async () => {
        const [p] = await payments(sessionId);
        return p?.transactionHash === transfer.txHash && p;
      }, 'the payment to name the transaction that holds its transfer');
      assert.equal(payment.status, 'SUCCESS');
      assert.equal(await succeededEvents(sessionId), 1);
    });

    test('the payout wallet changes while a proof is being verified: the proof is refused and nothing reaches the old wallet', async () => {
      const oldWallet = env.merchantWallet;
      const sessionId = await env.createSession({ amount: 0.07, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      const offer = await env.challenge(sessionId);
      const proof = await env.signedPayment(payer, offer);
      await env.sandbox.faults.set({ delayVerifyMs: 1500 });
      const verifying = (await env.sandbox.faults.get()).stats.verifyRequests;
      const answer = resend(env.baseUrl, sessionId, proof.header);
      // The wallet changes while the facilitator holds the verify answer.
      await waitFor(async () => (await env.sandbox.faults.get()).stats.verifyRequests > verifying, 'the proof to reach the facilitator’s verify', 10_000);
      const newWallet = newAccount().address;
      await setMerchantWallet(env.service.context.db, env.merchantId, 'sandbox', newWallet);
      try {
        const { status, body } = await answer;
        assert.equal(status, 402, `refused (${body.error})`);
        assert.deepEqual(await transfersFrom(payer.address, oldWallet), []);
        assert.deepEqual(await payments(sessionId), []);
      } finally {
        await setMerchantWallet(env.service.context.db, env.merchantId, 'sandbox', oldWallet);
      }
    });

    test('a payment FAILED whose transfer shows up on chain later (a reorg deeper than the confirmations) becomes SUCCESS with one event, logged and counted', async () => {
      const sessionId = await env.createSession({ amount: 0.08, currency: 'USD', orderType: 'STATIC' });
      const payer = await env.fundedPayer('1');
      const snapshot = await env.sandbox.chain.snapshot();
      await env.sandbox.faults.set({ settleFault: 'unavailable' });
      const first = await persistentBuyer(target(), sessionId, payer, { attempts: 1, validForSeconds: 60n });
      await env.sandbox.faults.set({ settleFault: 'none' });
      await env.sandbox.chain.increaseTime(120);
      const [failed] = await settledOf(sessionId);
      assert.equal(failed?.status, 'FAILED');

      // The chain reorganises back to before the expiry, and the authorization is used there.
      await env.sandbox.chain.revert(snapshot);
      const { auth, signature } = first.signed[0]!;
      assert.equal((await submitAuthorization(env.sandbox.chain, auth, signature)).status, 'success');
      const payment = await waitFor(
        async () => {
          const [p] = await payments(sessionId);
          return p?.status === 'SUCCESS' && p;
        },
        'the FAILED payment to be moved to SUCCESS',
        20_000,
      );
      assert.equal(payment.transactionHash, (await transfersFrom(payer.address))[0]?.txHash);
      assert.equal(await succeededEvents(sessionId), 1);
      // Counted once the reconciler's write is on disk, which may be just after the read above saw it.
      await waitFor(
        async () => /till_x402_payments_recovered_total [1-9]/.test(await (await fetch(`${env.baseUrl}/metrics`)).text()),
        'the recovery to be counted in /metrics',
        5_000,
      );
    });

    test('operators see PENDING payments: `till payments pending` with age and the last finding, and the oldest one’s age in /metrics', async () => {
      const sessionId = await env.createSession({ amount: 0.09, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ settleFault: 'unavailable' });
      const { signed } = await persistentBuyer(target(), sessionId, payer, { attempts: 1, validForSeconds: 400n });
      await env.sandbox.faults.set({ settleFault: 'none' });
      // The CLI runs beside the service without blocking it (the reconciler under test runs in this process).
      const listed = await waitFor(async () => {
        const { code, stdout, stderr } = await runNodeScript(CLI, ['payments', 'pending', '--json'], {
          env: {
            ...process.env,
            TILL_LOG_LEVEL: 'silent',
            TILL_DATABASE_URL: env.service.config.databaseUrl,
            TILL_SECRET_KEY: env.service.config.secretKey.toString('hex'),
          },
        });
        assert.equal(code, 0, stderr);
        const mine = (
          JSON.parse(stdout) as { payments: { sessionId: string; checks: number; lastFinding: string | null; ageSeconds: number }[] }
        ).payments.find((p) => p.sessionId === sessionId);
        return mine && mine.checks > 0 && mine;
      }, 'the reconciler to have looked at the payment');
      assert.equal(listed.lastFinding, 'authorization unused and still valid');
      assert.ok(listed.ageSeconds >= 0);
      const metrics = await (await fetch(`${env.baseUrl}/metrics`)).text();
      const age = Number(/^till_x402_oldest_pending_payment_age_seconds (\S+)$/m.exec(metrics)?.[1]);
      assert.ok(age > 0, `the oldest PENDING payment's age is reported (${age})`);
      // Cancelled by the buyer, it leaves the list.
      await cancelAuthorization(env.sandbox.chain, payer, env.sandbox.usdcAddress, signed[0]!.auth.nonce);
      assert.equal((await settledOf(sessionId))[0]?.status, 'FAILED');
    });

    test('a payment row the reconciler cannot read is logged, counted and skipped: the others are still resolved', async () => {
      // No request can store such a row (every proof is checked first): it is written here directly, as damage would.
      const broken = await env.createSession({ amount: 0.01, currency: 'USD', orderType: 'STATIC' });
      await env.challenge(broken);
      const { db } = env.service.context;
      const quote = await db.selectFrom('payment_quotes').selectAll().where('session_id', '=', broken).executeTakeFirstOrThrow();
      const now = Date.now();
      await db
        .insertInto('payments')
        .values({
          id: 'pay_damaged',
          mode: env.service.config.mode,
          session_id: broken,
          merchant_id: env.merchantId,
          quote_id: quote.id,
          status: 'PENDING',
          exclusive: 0,
          payer: '0xnot-an-address',
          pay_to: env.merchantWallet.toLowerCase(),
          asset: env.sandbox.usdcAddress.toLowerCase(),
          value: 10_000n,
          nonce: '0x00',
          valid_after: 0n,
          valid_before: BigInt(Math.floor(now / 1000) + 300),
          signature: '0x00',
          amount_minor: 1n,
          currency: 'USD',
          rate: '1',
          created_at: now,
          updated_at: now,
          next_check_at: now,
        })
        .execute();
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      await env.sandbox.faults.set({ dropNextSettleResponse: true });
      const lost = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(lost.last.body.error, 'payment_in_progress');
      const [payment] = await settledOf(sessionId);
      assert.equal(payment?.status, 'SUCCESS');
      // A pass writes its looks in one commit after its last row: the good payment's SUCCESS may be seen first.
      const damaged = await waitFor(async () => {
        const row = await db
          .selectFrom('payments')
          .select(['status', 'last_finding', 'next_check_at'])
          .where('id', '=', 'pay_damaged')
          .executeTakeFirstOrThrow();
        return row.last_finding !== null && row;
      }, "the reconciler's look at the damaged row");
      assert.equal(damaged.status, 'PENDING', 'nothing guessed about it');
      const metrics = await (await fetch(`${env.baseUrl}/metrics`)).text();
      assert.match(metrics, /till_background_row_failures_total\{pass="reconciler"\} [1-9]/);
      assert.match(damaged.last_finding ?? '', /^could not read the chain/);
      assert.ok(damaged.next_check_at! > now, 'and its next look moved on');
      await db.deleteFrom('payments').where('id', '=', 'pay_damaged').execute();
    });

    test('fifty payments legitimately PENDING hold back no other: a newer lost answer is still resolved', async () => {
      const stuckPayer = await env.fundedPayer('5');
      await env.sandbox.faults.set({ settleFault: 'unavailable' });
      for (let i = 0; i < 55; i++) {
        const sessionId = await env.createSession({ amount: 0.01, currency: 'USD' });
        const { last } = await persistentBuyer(target(), sessionId, stuckPayer, { attempts: 1, validForSeconds: 550n });
        assert.equal(last.status, 402);
      }
      await env.sandbox.faults.set({ settleFault: 'none', dropNextSettleResponse: true });
      const sessionId = await env.createSession({ amount: 0.04, currency: 'USD' });
      const payer = await env.fundedPayer('1');
      const lost = await persistentBuyer(target(), sessionId, payer, { attempts: 1 });
      assert.equal(lost.last.body.error, 'payment_in_progress');
      const [payment] = await settledOf(sessionId);
      assert.equal(payment?.status, 'SUCCESS');
      assert.equal(payment?.transactionHash, (await transfersFrom(payer.address))[0]?.txHash);
      assert.equal((await transfersFrom(stuckPayer.address)).length, 0);
    });
  });
}
