import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { expireDueSessions } from '../src/sessions/expiry.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { waitFor } from '../src/testing/wait.ts';

const SESSIONS = 12;

for (const { engine, skip } of engines) {
  describeOnEngine(`a payment racing the session deadline on ${engine}`, skip, () => {
    let env: PayingShop;
    before(async () => {
      env = await startPayingShop(engine);
    });
    after(() => env?.stop());

    test('each session ends either paid or expired, never both, with the sweeper running throughout', async (t) => {
      const { db } = env.service.context;
      const prepared = [];
      for (let i = 0; i < SESSIONS; i++) {
        const { sessionId, payer, offer } = await env.readyToPay({ amount: 0.03, currency: 'USD' });
        const proof = await env.signedPayment(payer, offer);
        prepared.push({ sessionId, payer, proof });
      }

      let sweeping = true;
      /** The time the last finished sweep swept at. */
      let sweptAt = 0;
      const sweeper = (async () => {
        while (sweeping) {
          const now = Date.now();
          await expireDueSessions({ ...env.service.context, db }, now);
          sweptAt = now;
          // On the clock: a sweeper's short interval, so sweeps keep landing all through the payments.
          await sleep(2);
        }
      })();
      // Deadlines staggered across the time a payment takes (verify, claim, settle), so some claims
      // land before and some after.
      const start = Date.now();
      const deadlineOf = (i: number) => start + 20 + i * 60;
      const answers = await Promise.all(
        prepared.map(async ({ sessionId, proof }, i) => {
          await db
            .updateTable('payment_sessions')
            .set({ expires_at: deadlineOf(i) })
            .where('id', '=', sessionId)
            .execute();
          const response = await env.pay(sessionId, proof.header);
          return response.status;
        }),
      );
      // The sweeper goes on until it has swept past the last deadline and after the last answer.
      const answeredAt = Date.now();
      await waitFor(() => sweptAt > Math.max(deadlineOf(SESSIONS - 1), answeredAt), 'a sweep after the last deadline and the last answer', 10_000);
      sweeping = false;
      await sweeper;
      await expireDueSessions({ ...env.service.context, db }, Date.now());

      let paid = 0;
      let expired = 0;
      for (const [i, { sessionId, payer }] of prepared.entries()) {
        const session = await db
          .selectFrom('payment_sessions')
          .select(['status', 'payments_in_progress'])
          .where('id', '=', sessionId)
          .executeTakeFirstOrThrow();
        const payments = await db.selectFrom('payments').select('status').where('session_id', '=', sessionId).execute();
        const events = (await db.selectFrom('webhook_events').select('type').where('session_id', '=', sessionId).execute()).map((e) => e.type).sort();
        const balance = await env.sandbox.balanceOf(payer.address);
        assert.notEqual(answers[i], 500);
        assert.equal(session.payments_in_progress, 0);
        if (session.status === 'SUCCESS') {
          paid++;
          assert.equal(answers[i], 200);
          assert.deepEqual(
            payments.map((p) => p.status),
            ['SUCCESS'],
          );
          assert.deepEqual(events, ['payment.pending', 'payment.succeeded'], 'a paid session is never expired');
          assert.equal(balance, 1_000_000n - 30_000n);
        } else {
          expired++;
          assert.equal(session.status, 'EXPIRED');
          assert.ok(answers[i] === 404 || answers[i] === 402, `refused, not paid: ${answers[i]}`);
          assert.deepEqual(payments, [], 'an expired session took no payment');
          assert.deepEqual(events, ['session.expired']);
          assert.equal(balance, 1_000_000n, 'nobody was charged');
        }
      }
      t.diagnostic(`${paid} paid, ${expired} expired`);
    });
  });
}
