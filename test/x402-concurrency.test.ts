import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describeOnEngine, engines, startPayingService } from './helpers/harness.ts';
import { nowSeconds, signedXPayment } from './helpers/x402-payer.ts';

type Paying = Awaited<ReturnType<typeof startPayingService>>;

const RACE_ROUNDS = 5;

const newAccount = () => privateKeyToAccount(generatePrivateKey());

for (const { engine, skip } of engines) {
  describeOnEngine(`x402 settlement under concurrency on ${engine}`, skip, () => {
    let env: Paying;
    let apiKey: string;
    let usdc: Address;
    const merchantWallet = newAccount().address;

    before(async () => {
      env = await startPayingService(engine, { TILL_DATABASE_POOL_SIZE: '12' });
      usdc = env.sandbox.usdcAddress;
      apiKey = (await env.service.merchant({ walletAddress: merchantWallet })).apiKey;
    });
    after(() => env?.stop());

    async function createSession(orderType: 'STATIC' | 'TRANSIENT'): Promise<string> {
      const response = await fetch(`${env.baseUrl}/api/checkout/v2/payment_session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey },
        body: JSON.stringify({ amount: 0.25, currency: 'USD', orderType }),
      });
      assert.equal(response.status, 201, await response.clone().text());
      return (await response.json()).sessionId;
    }

    async function quote(sessionId: string) {
      const response = await fetch(`${env.baseUrl}/x402/session/${sessionId}`);
      assert.equal(response.status, 402);
      const [offer] = (await response.json()).accepts;
      return { value: BigInt(offer.maxAmountRequired), payTo: offer.payTo as Address };
    }

    async function fundedPayer() {
      const payer = newAccount();
      await env.sandbox.fund(payer.address, '1');
      return payer;
    }

    type Answer = { status: number; error?: string; paymentId?: string };
    async function pay(sessionId: string, header: string): Promise<Answer> {
      const response = await fetch(`${env.baseUrl}/x402/session/${sessionId}`, { headers: { 'x-payment': header } });
      const body = await response.json();
      return { status: response.status, error: typeof body.error === 'string' ? (body.error === 'payment_failed' ? `${body.error}: ${body.message}` : body.error) : JSON.stringify(body.error), paymentId: body.paymentId };
    }

    const tally = (answers: Answer[]) => answers.reduce<Record<string, number>>((counts, a) => ({ ...counts, [`${a.status}${a.error ? ` ${a.error}` : ''}`]: (counts[`${a.status}${a.error ? ` ${a.error}` : ''}`] ?? 0) + 1 }), {});

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
      assert.ok(answers.every((a) => a.status === 200 || (a.status === 402 && a.error === 'payment_in_progress')), JSON.stringify(counts));
      assert.ok(answers.some((a) => a.status === 200), JSON.stringify(counts));
      assert.equal(new Set(answers.filter((a) => a.status === 200).map((a) => a.paymentId)).size, 1);
      assert.equal(after.settleRequests - before.settleRequests, 1);
      assert.equal(after.settledTransactions.length - before.settledTransactions.length, 1);
      assert.equal((await env.sandbox.balanceOf(merchantWallet)) - merchantBefore, value);
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - value);
      const rows = await env.service.context.db.selectFrom('payments').select('status').where('session_id', '=', sessionId).execute();
      assert.deepEqual(rows.map((row) => row.status), ['SUCCESS']);
      t.diagnostic(JSON.stringify(counts));
    });

    test('20 payers racing on one TRANSIENT session: exactly one transfer, every other answer 200 or 402', async (t) => {
      // Several sessions in turn, so that an interleaving that breaks shows up in one run.
      for (let round = 1; round <= RACE_ROUNDS; round++) {
        const sessionId = await createSession('TRANSIENT');
        const payers = await Promise.all(Array.from({ length: 20 }, fundedPayer));
        const { value, payTo } = await quote(sessionId);
        const headers = await Promise.all(payers.map(async (payer) => (await signedXPayment(payer, usdc, payTo, value, { validBefore: nowSeconds() + 300n })).header));
        const before = (await env.sandbox.faults.get()).stats;
        const merchantBefore = await env.sandbox.balanceOf(merchantWallet);

        const answers = await Promise.all(headers.map((header) => pay(sessionId, header)));

        const after = (await env.sandbox.faults.get()).stats;
        const counts = JSON.stringify({ round, ...tally(answers) });
        assert.ok(answers.every((a) => a.status === 200 || a.status === 402), counts);
        assert.ok(answers.some((a) => a.status === 200), counts);
        assert.equal(new Set(answers.filter((a) => a.status === 200).map((a) => a.paymentId)).size, 1);
        assert.equal(after.settledTransactions.length - before.settledTransactions.length, 1);
        assert.equal((await env.sandbox.balanceOf(merchantWallet)) - merchantBefore, value);
        const balances = await Promise.all(payers.map((payer) => env.sandbox.balanceOf(payer.address)));
        assert.equal(balances.filter((balance) => balance === 1_000_000n - value).length, 1);
        assert.equal(balances.filter((balance) => balance === 1_000_000n).length, 19);
        const rows = await env.service.context.db.selectFrom('payments').select('status').where('session_id', '=', sessionId).execute();
        assert.deepEqual(rows.map((row) => row.status), ['SUCCESS']);
        t.diagnostic(counts);
      }
    });
  });
}
