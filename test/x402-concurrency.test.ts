import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Address } from 'viem';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { nowSeconds, signedXPayment } from '../src/testing/payer.ts';

const RACE_ROUNDS = 5;

for (const { engine, skip } of engines) {
  describeOnEngine(`x402 settlement under concurrency on ${engine}`, skip, () => {
    let env: PayingShop;
    let usdc: Address;
    let merchantWallet: Address;

    before(async () => {
      env = await startPayingShop(engine, { TILL_DATABASE_POOL_SIZE: '12' });
      usdc = env.sandbox.usdcAddress;
      merchantWallet = env.merchantWallet;
    });
    after(() => env?.stop());

    const createSession = (orderType: 'STATIC' | 'TRANSIENT') => env.createSession({ amount: 0.25, currency: 'USD', orderType });
    const quote = (sessionId: string) => env.challenge(sessionId);
    const fundedPayer = () => env.fundedPayer();

    type Answer = { status: number; error?: string; paymentId?: string };
    async function pay(sessionId: string, header: string): Promise<Answer> {
      const response = await env.pay(sessionId, header);
      const body = await response.json();
      return {
        status: response.status,
        error: typeof body.error === 'string' ? (body.error === 'payment_failed' ? `${body.error}: ${body.message}` : body.error) : JSON.stringify(body.error),
        paymentId: body.paymentId,
      };
    }

    const tally = (answers: Answer[]) => {
      const counts: Record<string, number> = {};
      for (const a of answers) {
        const key = `${a.status}${a.error ? ` ${a.error}` : ''}`;
        counts[key] = (counts[key] ?? 0) + 1;
      }
      return counts;
    };

    test('50 concurrent requests with the same proof: settled once, one transfer, every answer 200 or payment_in_progress', async (t) => {
      // STATIC: a settled session does not short-circuit, so only the proof's own claim prevents a second settle.
      const sessionId = await createSession('STATIC');
      const payer = await fundedPayer();
      const { value, payTo } = await quote(sessionId);
      const { header } = await signedXPayment(payer, usdc, payTo, value);
      const before = (await env.sandbox.faults.get()).stats;
      const merchantBefore = await env.sandbox.balanceOf(merchantWallet);

      const answers = await Promise.all(Array.from({ length: 50 }, () => pay(sessionId, header)));

      const after = (await env.sandbox.faults.get()).stats;
      const counts = tally(answers);
      assert.ok(
        answers.every((a) => a.status === 200 || (a.status === 402 && a.error === 'payment_in_progress')),
        JSON.stringify(counts),
      );
      assert.ok(
        answers.some((a) => a.status === 200),
        JSON.stringify(counts),
      );
      assert.equal(new Set(answers.filter((a) => a.status === 200).map((a) => a.paymentId)).size, 1);
      assert.equal(after.settleRequests - before.settleRequests, 1);
      assert.equal(after.settledTransactions.length - before.settledTransactions.length, 1);
      assert.equal((await env.sandbox.balanceOf(merchantWallet)) - merchantBefore, value);
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - value);
      const rows = await env.service.context.db.selectFrom('payments').select('status').where('session_id', '=', sessionId).execute();
      assert.deepEqual(
        rows.map((row) => row.status),
        ['SUCCESS'],
      );
      t.diagnostic(JSON.stringify(counts));
    });

    test('20 payers racing on one TRANSIENT session: exactly one transfer, every other answer 200 or 402', async (t) => {
      // Several sessions in turn, so that an interleaving that breaks shows up in one run.
      for (let round = 1; round <= RACE_ROUNDS; round++) {
        const sessionId = await createSession('TRANSIENT');
        const payers = await Promise.all(Array.from({ length: 20 }, fundedPayer));
        const { value, payTo } = await quote(sessionId);
        const headers = await Promise.all(
          payers.map(async (payer) => (await signedXPayment(payer, usdc, payTo, value, { validBefore: nowSeconds() + 300n })).header),
        );
        const before = (await env.sandbox.faults.get()).stats;
        const merchantBefore = await env.sandbox.balanceOf(merchantWallet);

        const answers = await Promise.all(headers.map((header) => pay(sessionId, header)));

        const after = (await env.sandbox.faults.get()).stats;
        const counts = JSON.stringify({ round, ...tally(answers) });
        assert.ok(
          answers.every((a) => a.status === 200 || a.status === 402),
          counts,
        );
        assert.ok(
          answers.some((a) => a.status === 200),
          counts,
        );
        assert.equal(new Set(answers.filter((a) => a.status === 200).map((a) => a.paymentId)).size, 1);
        assert.equal(after.settledTransactions.length - before.settledTransactions.length, 1);
        assert.equal((await env.sandbox.balanceOf(merchantWallet)) - merchantBefore, value);
        const balances = await Promise.all(payers.map((payer) => env.sandbox.balanceOf(payer.address)));
        assert.equal(balances.filter((balance) => balance === 1_000_000n - value).length, 1);
        assert.equal(balances.filter((balance) => balance === 1_000_000n).length, 19);
        const rows = await env.service.context.db.selectFrom('payments').select('status').where('session_id', '=', sessionId).execute();
        assert.deepEqual(
          rows.map((row) => row.status),
          ['SUCCESS'],
        );
        t.diagnostic(counts);
      }
    });
  });
}
