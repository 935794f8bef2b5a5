import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWalletClient, http, publicActions } from 'viem';
import { base } from 'viem/chains';
import { wrapFetchWithPayment } from 'x402-fetch';
import { listPaidOrders } from '../src/payments/receipts.ts';
import { createPaymentSession } from '../src/sessions/create-session.ts';
import { findSession } from '../src/sessions/sessions.ts';
import { authorizedAgent, callMcpTool } from '../src/testing/agent.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { newAccount } from '../src/testing/payer.ts';

// A session created over MCP (the tool create_payment_session) with its own destination: an x402
// client pays it on the sandbox and the USDC lands at that address, not at the merchant's wallet.
for (const { engine, skip } of engines) {
  describeOnEngine(`a session's own publicAddress is paid on ${engine}`, skip, () => {
    let env: PayingShop;
    before(async () => {
      env = await startPayingShop(engine);
    });
    after(() => env?.stop());

    async function payWithClient(sessionId: string) {
      const buyer = await env.fundedPayer('1');
      const wallet = createWalletClient({ account: buyer, chain: base, transport: http(env.sandbox.rpcUrl) }).extend(publicActions);
      const pay = wrapFetchWithPayment(fetch, wallet as never, 1_000_000n);
      const response = await pay(`${env.baseUrl}/x402/session/${sessionId}`);
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      return { buyer, body };
    }

    test('the quote is paid to the publicAddress; the merchant wallet receives nothing; the next session pays the wallet again', async () => {
      const destination = newAccount().address;
      assert.notEqual(destination, env.merchantWallet);
      const { accessToken } = await authorizedAgent(env.service.context, env.merchantId, ['sessions:write']);
      const call = await callMcpTool(env.service.app, accessToken, 'create_payment_session', {
        amount: 0.25,
        currency: 'USD',
        orderType: 'TRANSIENT',
        editable: false,
        chains: [{ name: 'base', tokens: ['USDC'], publicAddress: destination.toLowerCase() }],
      });
      assert.equal(call.body.result.isError, undefined, JSON.stringify(call.body));
      const created = call.body.result.structuredContent as { sessionId: string; redirectUrl: string };
      const offer = await env.challenge(created.sessionId);
      assert.equal(offer.payTo, destination, 'the challenge advertises the session’s own address');

      const destinationBefore = await env.sandbox.balanceOf(destination);
      const merchantBefore = await env.sandbox.balanceOf(env.merchantWallet);
      const { buyer, body } = await payWithClient(created.sessionId);
      assert.equal(body.status, 'SUCCESS');
      assert.equal(body.payTo, destination);
      assert.equal((await env.sandbox.balanceOf(destination)) - destinationBefore, offer.value);
      assert.equal(await env.sandbox.balanceOf(env.merchantWallet), merchantBefore);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 1_000_000n - offer.value);

      const receipt = await (await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${body.paymentId}`)).json();
      assert.equal(receipt.payTo, destination);
      const { orders } = await listPaidOrders(env.service.context.db, 'sandbox', env.merchantId);
      assert.equal(orders[0]?.publicOrderId, body.paymentId);

      // Nothing else changed: the merchant's wallet and its other sessions are as before.
      const plain = await env.createSession({ amount: 0.1, currency: 'USD' });
      assert.equal((await findSession(env.service.context.db, plain))?.pay_to, null);
      assert.equal((await env.challenge(plain)).payTo, env.merchantWallet);
      const merchantBeforePlain = await env.sandbox.balanceOf(env.merchantWallet);
      await payWithClient(plain);
      assert.equal((await env.sandbox.balanceOf(env.merchantWallet)) - merchantBeforePlain, 100_000n);
      assert.equal((await env.sandbox.balanceOf(destination)) - destinationBefore, offer.value);
    });

    test('a merchant without a payout wallet can still be paid at a session’s publicAddress', async () => {
      const { merchantId } = await env.service.merchant({ name: 'No wallet yet' });
      const destination = newAccount().address;
      const created = await createPaymentSession(
        env.service.context,
        merchantId,
        {
          amount: 0.05,
          currency: 'USD',
          chains: [{ name: 'base', tokens: ['USDC'], publicAddress: destination }],
        },
        { createdVia: 'mcp', mode: 'sandbox' },
      );
      assert.equal(created.warnings, undefined);
      const offer = await env.challenge(created.sessionId);
      const { body } = await payWithClient(created.sessionId);
      assert.equal(body.payTo, destination);
      assert.equal(await env.sandbox.balanceOf(destination), offer.value);
    });
  });
}
