import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { BASE } from '../common/network.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../testing/harness.ts';
import { refusedWith } from '../testing/refusals.ts';
import { findReceipt, listPaidOrders, normalizePublicOrderId } from './receipts.ts';

test('a public order id is found with or without TX-, in any case', () => {
  assert.equal(normalizePublicOrderId('TX-ab12'), 'TX-AB12');
  assert.equal(normalizePublicOrderId('tx-ab12'), 'TX-AB12');
  assert.equal(normalizePublicOrderId('ab12'), 'TX-AB12');
});

for (const { engine, skip } of engines) {
  describeOnEngine(`paid orders and receipts on ${engine}`, skip, () => {
    let env: PayingShop;
    let other: { merchantId: string };
    const paid: { sessionId: string; paymentId: string; amount: number }[] = [];

    /** A session paid over x402 on the sandbox; answers the order's public id. */
    async function payFor(body: Record<string, unknown>) {
      const { sessionId, payer, offer } = await env.readyToPay(body);
      const { header } = await env.signedPayment(payer, offer);
      const response = await env.pay(sessionId, header);
      const answer = await response.json();
      assert.equal(response.status, 200, JSON.stringify(answer));
      return { sessionId, paymentId: answer.paymentId as string };
    }

    before(async () => {
      env = await startPayingShop(engine, {}, { name: 'Coffee Shop' });
      other = await env.service.merchant({ name: 'Other', walletAddress: env.merchantWallet });
      for (const amount of [0.01, 0.02, 0.03]) {
        paid.push({ ...(await payFor({ amount, currency: 'USD', orderId: `order-${amount}` })), amount });
        // On the clock: distinct settlement times, so newest-first is a known order.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // Opened but never paid: not an order.
      await env.createSession({ amount: 0.04, currency: 'USD' });
    });
    after(() => env?.stop());
    const db = () => env.service.context.db;
    const explorerTxUrl = () => env.service.config.explorerTxUrl;

    test('paid orders come newest first, with their order id, amounts, transaction and paid time', async () => {
      const page = await listPaidOrders(db(), 'sandbox', env.merchantId, { page: 1, size: 10 });
      assert.equal(page.hasMore, false);
      assert.equal(page.page, 1);
      assert.equal(page.size, 10);
      assert.deepEqual(
        page.orders.map((order) => order.publicOrderId),
        [...paid].reverse().map((order) => order.paymentId),
      );
      const [newest] = page.orders;
      assert.equal(newest?.paymentSessionId, paid[2]?.sessionId);
      assert.equal(newest?.orderId, 'order-0.03');
      assert.equal(newest?.amount, 0.03);
      assert.equal(newest?.currency, 'USD');
      assert.equal(newest?.token, 'USDC');
      assert.equal(newest?.tokenAmount, '0.03');
      assert.equal(newest?.network, 'base');
      assert.match(newest?.transactionHash ?? '', /^0x[0-9a-f]{64}$/);
      assert.ok(Date.parse(newest?.paidAt ?? '') > Date.now() - 600_000);
      assert.match(newest?.publicOrderId ?? '', /^TX-[0-9A-F]{32}$/);
    });

    test('pages split the list; a page past the end is empty; bad bounds are refused by field', async () => {
      const first = await listPaidOrders(db(), 'sandbox', env.merchantId, { page: 1, size: 2 });
      const second = await listPaidOrders(db(), 'sandbox', env.merchantId, { page: 2, size: 2 });
      const beyond = await listPaidOrders(db(), 'sandbox', env.merchantId, { page: 3, size: 2 });
      assert.deepEqual(
        [...first.orders, ...second.orders].map((order) => order.publicOrderId),
        [...paid].reverse().map((order) => order.paymentId),
      );
      assert.equal(first.hasMore, true);
      assert.equal(second.hasMore, false);
      assert.deepEqual(beyond.orders, []);
      assert.equal((await listPaidOrders(db(), 'sandbox', env.merchantId)).size, 20);
      for (const [paging, field] of [
        [{ page: 0 }, 'page'],
        [{ page: 1.5 }, 'page'],
        [{ size: 0 }, 'size'],
        [{ size: 101 }, 'size'],
      ] as const) {
        await assert.rejects(listPaidOrders(db(), 'sandbox', env.merchantId, paging), refusedWith('invalid_field', field));
      }
    });

    test("another merchant's list is its own", async () => {
      assert.deepEqual(await listPaidOrders(db(), 'sandbox', other.merchantId), { orders: [], page: 1, size: 20, hasMore: false });
    });

    test('a receipt is found with or without TX-, only among the merchant’s orders when scoped; the same one E4 shows', async () => {
      const order = paid[0]!;
      const receipt = await findReceipt(db(), order.paymentId, { modes: ['sandbox'], explorerTxUrl: () => explorerTxUrl(), network: () => BASE });
      assert.equal(receipt?.publicOrderId, order.paymentId);
      assert.equal(receipt?.paymentSessionId, order.sessionId);
      assert.equal(receipt?.merchantName, 'Coffee Shop');
      assert.equal(receipt?.payTo, env.merchantWallet);
      assert.deepEqual(
        await findReceipt(db(), order.paymentId.slice(3).toLowerCase(), { modes: ['sandbox'], explorerTxUrl: () => explorerTxUrl(), network: () => BASE }),
        receipt,
      );
      assert.deepEqual(
        await findReceipt(db(), order.paymentId, { modes: ['sandbox'], explorerTxUrl: () => explorerTxUrl(), network: () => BASE, merchantId: env.merchantId }),
        receipt,
      );
      assert.equal(
        await findReceipt(db(), order.paymentId, {
          modes: ['sandbox'],
          explorerTxUrl: () => explorerTxUrl(),
          network: () => BASE,
          merchantId: other.merchantId,
        }),
        undefined,
      );
      assert.equal(
        await findReceipt(db(), `TX-${'0'.repeat(32)}`, { modes: ['sandbox'], explorerTxUrl: () => explorerTxUrl(), network: () => BASE }),
        undefined,
      );
      const e4 = await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${order.paymentId}`);
      assert.deepEqual(await e4.json(), receipt);
    });
  });
}
