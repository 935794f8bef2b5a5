import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createFacilitator } from '../src/chain/facilitator.ts';
import { confirmSettled } from '../src/chain/payments.ts';
import { createChainReader } from '../src/chain/reader.ts';
import { BASE } from '../src/common/network.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { nowSeconds } from '../src/testing/payer.ts';

/**
 * A reorganisation is played on the sandbox chain by reverting to a snapshot taken before the
 * settlement: the transfer leaves the canonical chain, as it would on Base.
 */
for (const { engine, skip } of engines) {
  describeOnEngine(`settled payments re-checked at finality on ${engine}`, skip, () => {
    let env: PayingShop;
    let reconcile: () => Promise<number>;
    before(async () => {
      env = await startPayingShop(engine, { TILL_RECONCILE_GRACE_MS: '1000', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '1000' });
      const { context } = env.service;
      const options = {
        mode: 'sandbox' as const,
        network: BASE,
        explorerTxUrl: env.service.config.explorerTxUrl,
        chain: createChainReader(env.sandbox.rpcUrl),
        facilitator: createFacilitator({
          url: env.sandbox.facilitatorUrl,
          headers: {},
          callSeconds: context.metrics.facilitatorCallSeconds,
          settleTimeoutMs: 1000,
        }),
        confirmations: 2n,
        graceMs: 0,
      };
      reconcile = () => confirmSettled(context, options);
    });
    after(() => env?.stop());

    async function paySession(validForSeconds: bigint) {
      const { sessionId, payer, offer } = await env.readyToPay({ amount: 0.04, currency: 'USD' });
      const snapshot = await env.sandbox.chain.snapshot();
      const proof = await env.signedPayment(payer, offer, { validBefore: nowSeconds() + validForSeconds });
      const paid = await env.pay(sessionId, proof.header);
      assert.equal(paid.status, 200);
      const payment = await env.service.context.db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).executeTakeFirstOrThrow();
      return { sessionId, payer, snapshot, payment };
    }
    const paymentById = (id: string) => env.service.context.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    test('a settlement with enough confirmations is marked final', async () => {
      const { payment } = await paySession(300n);
      await reconcile();
      assert.equal((await paymentById(payment.id)).finalized_at, null, 'not final before 2 confirmations');
      await env.sandbox.chain.mine(2);
      await reconcile();
      const final = await paymentById(payment.id);
      assert.ok(final.finalized_at !== null);
      assert.equal(final.status, 'SUCCESS');
    });

    test('a transfer lost to a reorg is submitted again while the authorization is valid: still one payment, paid once', async () => {
      const { payment, payer, snapshot, sessionId } = await paySession(300n);
      const merchantBefore = await env.sandbox.balanceOf(env.merchantWallet);
      const settleRequestsBefore = (await env.sandbox.faults.get()).stats.settleRequests;
      await env.sandbox.chain.revert(snapshot);
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n, 'the reorg undid the transfer');
      await reconcile();
      const again = await paymentById(payment.id);
      assert.equal(again.status, 'SUCCESS');
      // Re-submitted; the replacement may even have the same hash, the facilitator's account nonce being reorged too.
      const onChain = await createChainReader(env.sandbox.rpcUrl).checkTransfer(again.tx_hash!, {
        asset: again.asset,
        payer: again.payer,
        payTo: again.pay_to,
        value: again.value,
        nonce: again.nonce,
      });
      assert.equal(onChain.kind, 'holds', 'the recorded transaction is on the canonical chain and holds the transfer');
      assert.equal((await env.sandbox.faults.get()).stats.settleRequests, settleRequestsBefore + 1, 'submitted once more');
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - 40_000n);
      assert.equal(await env.sandbox.balanceOf(env.merchantWallet), merchantBefore, 'the merchant ends up paid exactly once');
      const events = (await env.service.context.db.selectFrom('webhook_events').select('type').where('session_id', '=', sessionId).execute())
        .map((e) => e.type)
        .sort();
      assert.deepEqual(events, ['payment.pending', 'payment.succeeded']);
    });

    test('a transfer lost to a reorg after its authorization expired is REVERSED, with an event, and the session reopens', async () => {
      const { payment, snapshot, sessionId } = await paySession(15n);
      await env.sandbox.chain.revert(snapshot);
      await env.sandbox.chain.increaseTime(30);
      await reconcile();
      assert.equal((await paymentById(payment.id)).status, 'SUCCESS', 'not decided before the expiry is 2 blocks deep');
      await env.sandbox.chain.mine(2);
      await reconcile();
      const reversed = await paymentById(payment.id);
      assert.equal(reversed.status, 'REVERSED');
      assert.equal(reversed.failure_reason, 'transfer_reorged_out');
      const session = await env.service.context.db.selectFrom('payment_sessions').select(['status']).where('id', '=', sessionId).executeTakeFirstOrThrow();
      assert.equal(session.status, 'OPEN', 'the merchant was not paid, so the session can be paid again');
      const events = (
        await env.service.context.db
          .selectFrom('webhook_events')
          .select(['type', 'body'])
          .where('session_id', '=', sessionId)
          .where('type', '!=', 'payment.pending')
          .orderBy('created_at')
          .execute()
      ).map((e) => [e.type, JSON.parse(e.body).status]);
      assert.deepEqual(events, [
        ['payment.succeeded', 'SUCCESS'],
        ['payment.reversed', 'FAILED'],
      ]);
      const receipt = await (await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${payment.public_order_id}`)).json();
      assert.equal(receipt.status, 'REVERSED');
    });
  });
}
