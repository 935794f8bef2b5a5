import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { createWalletClient, http, publicActions } from 'viem';
import { base } from 'viem/chains';
import { wrapFetchWithPayment as wrapFetchV1 } from 'x402-fetch';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { readSession } from '../src/testing/shop.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`x402 with the real client libraries on ${engine}`, skip, () => {
    let env: PayingShop;
    before(async () => {
      env = await startPayingShop(engine);
    });
    after(() => env?.stop());

    const fundedBuyer = (usdc: string) => env.fundedPayer(usdc);
    const walletOf = (buyer: Awaited<ReturnType<typeof fundedBuyer>>) =>
      createWalletClient({ account: buyer, chain: base, transport: http(env.sandbox.rpcUrl) });

    test('x402-fetch (v1, X-PAYMENT) pays a session; the merchant receives exactly the quote; the receipt shows the transaction', async () => {
      const sessionId = await env.createSession({ amount: 0.1, currency: 'USD', orderId: 'v1-order' });
      const buyer = await fundedBuyer('1');
      const wallet = walletOf(buyer).extend(publicActions);
      const before = await env.sandbox.balanceOf(env.merchantWallet);
      const pay = wrapFetchV1(fetch, wallet as never, 100_000n);
      const response = await pay(`${env.baseUrl}/x402/session/${sessionId}`);
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'SUCCESS');
      assert.equal(body.paymentSessionId, sessionId);
      assert.equal(body.payTo, env.merchantWallet);
      assert.ok(response.headers.get('x-payment-response'));
      const settle = JSON.parse(Buffer.from(response.headers.get('x-payment-response')!, 'base64').toString());
      assert.equal(settle.network, 'base');
      assert.equal((await env.sandbox.balanceOf(env.merchantWallet)) - before, 100_000n);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 900_000n);
      assert.ok(body.receipt.endsWith(settle.transaction));

      const receipt = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${body.paymentId}`);
      assert.equal(receipt.status, 200);
      const details = await receipt.json();
      assert.equal(details.transactionHash, settle.transaction);
      assert.equal(details.tokenAmount, '0.10');
      assert.equal(details.payTo, env.merchantWallet);
      assert.equal(details.orderId, 'v1-order');
      const withoutPrefix = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${body.paymentId.slice(3)}`);
      assert.equal(withoutPrefix.status, 200);
      const page = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${body.paymentId}`, { headers: { accept: 'text/html' } });
      assert.match(page.headers.get('content-type')!, /text\/html/);
      assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
      const html = await page.text();
      assert.match(html, new RegExp(settle.transaction));
      assert.match(html, /<strong>Test payment — no real money\.<\/strong>/);
      assert.match(html, /<th scope="row">Amount<\/th><td>0\.10 USD<\/td>/, "money is written with the currency's decimals, not in monospace");
      assert.match(html, /<th scope="row">Date<\/th><td><time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ \d{4}, \d{2}:\d{2} UTC<\/time>/, 'a readable date');
      assert.match(html, /<th scope="row">Paid<\/th><td>0\.10 USDC on Base<\/td>/, 'the network as people name it, not "base"');
      assert.match(html, /<span class="tag tag-granted">Paid<\/span>/);
      assert.match(html, /<th scope="row">Payer<\/th><td><code>0x[0-9a-fA-F]{40}<\/code>/, 'addresses in monospace');
      const missing = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/TX-${'0'.repeat(32)}`, { headers: { accept: 'text/html' } });
      assert.equal(missing.status, 404);
      assert.match(missing.headers.get('content-type')!, /text\/html/);
      assert.match(missing.headers.get('content-security-policy')!, /default-src 'none'/);
      assert.match(await missing.text(), /<h1>Receipt not found<\/h1>/);
      const missingJson = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/TX-${'0'.repeat(32)}`);
      assert.equal(missingJson.status, 404);
      assert.equal((await missingJson.json()).error.code, 'not_found');

      // Settled: asking again is 200 with the same result and charges nobody.
      const again = await pay(`${env.baseUrl}/x402/session/${sessionId}`);
      assert.equal(again.status, 200);
      assert.equal((await again.json()).paymentId, body.paymentId);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 900_000n);

      // The merchant's view of the session lists the order.
      const session = await (await readSession(env.baseUrl, env.apiKey, sessionId)).json();
      assert.equal(session.status, 'SUCCESS');
      assert.equal(session.payments.length, 1);
      assert.deepEqual(
        { ...session.payments[0], createdAt: undefined, settledAt: undefined },
        {
          paymentId: body.paymentId,
          status: 'SUCCESS',
          amount: 0.1,
          currency: 'USD',
          tokenAmount: '0.10',
          rate: details.rate,
          payer: buyer.address,
          payTo: env.merchantWallet,
          transactionHash: settle.transaction,
          receiptUrl: `http://till.test/checkout/v2/orders/receipt/${body.paymentId}`,
          failureReason: null,
          createdAt: undefined,
          settledAt: undefined,
          refunds: [],
          refundedAmount: 0,
          refundedTokenAmount: '0.00',
        },
      );
    });

    test("x402-fetch's default 0.1 USDC cap refuses a 0.5 USD session unless its third argument raises it", async () => {
      const sessionId = await env.createSession({ amount: 0.5, currency: 'USD' });
      const buyer = await fundedBuyer('1');
      const wallet = walletOf(buyer);
      await assert.rejects(wrapFetchV1(fetch, wallet as never)(`${env.baseUrl}/x402/session/${sessionId}`), /exceeds maximum/);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 1_000_000n);
      const response = await wrapFetchV1(fetch, wallet as never, 500_000n)(`${env.baseUrl}/x402/session/${sessionId}`);
      assert.equal(response.status, 200);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 500_000n);
    });

    test('@x402/fetch (v2, PAYMENT-SIGNATURE) pays a session', async () => {
      const sessionId = await env.createSession({ amount: 0.07, currency: 'USD' });
      const buyer = await fundedBuyer('1');
      const before = await env.sandbox.balanceOf(env.merchantWallet);
      const pay = wrapFetchWithPaymentFromConfig(fetch, {
        schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(buyer) }],
        spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: env.sandbox.usdcAddress }] },
      } as never);
      const response = await pay(`${env.baseUrl}/x402/session/${sessionId}`);
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'SUCCESS');
      const settle = JSON.parse(Buffer.from(response.headers.get('payment-response')!, 'base64').toString());
      assert.equal(settle.network, 'eip155:8453');
      assert.equal((await env.sandbox.balanceOf(env.merchantWallet)) - before, 70_000n);
    });

    test('an editable session is paid with ?amount= on both requests', async () => {
      const sessionId = await env.createSession({ amount: 1, currency: 'USD', editable: true, minAmount: 0.02, orderType: 'STATIC' });
      const noAmount = await fetch(`${env.baseUrl}/x402/session/${sessionId}`);
      assert.equal(noAmount.status, 402);
      const challenge = await noAmount.json();
      assert.equal(challenge.error, 'amount_required');
      assert.deepEqual(challenge.accepts, []);
      assert.equal(challenge.minAmount, 0.02);
      const buyer = await fundedBuyer('1');
      const wallet = walletOf(buyer);
      const response = await wrapFetchV1(fetch, wallet as never)(`${env.baseUrl}/checkout/v2/x402/session/${sessionId}?amount=0.03`);
      assert.equal(response.status, 200);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 970_000n);
    });

    test('the example scripts in docs/examples pay a session as written, funding a new buyer from the faucet', async () => {
      for (const script of ['pay-v1.mjs', 'pay-v2.mjs']) {
        const sessionId = await env.createSession({ amount: 0.25, currency: 'USD', orderId: `example-${script}` });
        // Asynchronously: the service answering the script runs in this very process.
        const run = await promisify(execFile)(process.execPath, [resolve(import.meta.dirname, '../docs/examples', script), sessionId], {
          env: { ...process.env, TILL: env.baseUrl, BUYER_KEY: '' },
          encoding: 'utf8',
        });
        assert.match(run.stdout, new RegExp(`^200 \\{"status":"SUCCESS","paymentSessionId":"${sessionId}"`), script);
        assert.match(run.stdout, /settlement: .*"success":true/, script);
      }
    });
  });
}
