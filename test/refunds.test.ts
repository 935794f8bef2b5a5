// Refunds from the merchant's payout wallet, end to end on the sandbox chain and facilitator: the
// dashboard's two form posts with an authorization signed by the payout key as a wallet signs it,
// what the chain shows, the session read, and the signed webhook event.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { type Address, createPublicClient, erc20Abi, type Hex, http, type LocalAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createUser } from '../src/accounts/users.ts';
import { createFacilitator } from '../src/chain/facilitator.ts';
import { SANDBOX_PAYOUT_KEY_FILE } from '../src/cli/serve.ts';
import { submitAuthorization, transfersOnChain } from '../src/testing/buyer.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { temporaryDirectories } from '../src/testing/environment.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { Browser } from '../src/testing/page-browser.ts';
import { authorization, exactRequirements, newAccount, paymentPayload, signAuthorization } from '../src/testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, readSession, signedPayment } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';
import { setWebhook } from '../src/webhooks/endpoints.ts';
import { startReceiver } from '../src/webhooks/fixtures/receiver.ts';

type TypedData = {
  domain: { name: string; version: string; chainId: number; verifyingContract: Address };
  types: Record<string, { name: string; type: string }[]>;
  primaryType: 'TransferWithAuthorization';
  message: { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex };
};
type ApiRefund = { id: string; amount: number; currency: string; status: string; txHash: string | null };
type ApiPayment = { paymentId: string; refunds: ApiRefund[]; refundedAmount: number; refundedTokenAmount: string };

test("a sandbox's first start keeps the demo payout wallet's key in the data folder, readable by its owner only", async () => {
  const dataDir = temporaryDirectories('till-refund-key-')();
  const run = await runNodeScript(fileURLToPath(new URL('../src/cli/main.ts', import.meta.url)), ['serve'], {
    env: {
      PATH: process.env.PATH,
      TILL_DATA_DIR: dataDir,
      TILL_SANDBOX: 'true',
      TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
      TILL_BASE_RPC_URL: 'http://127.0.0.1:9',
      PORT: '0',
    },
    timeoutMs: 15_000,
  });
  const wallet = /paid out to (0x[0-9a-fA-F]{40})/.exec(run.stdout)?.[1];
  assert.ok(wallet, run.stdout + run.stderr);
  const file = join(dataDir, SANDBOX_PAYOUT_KEY_FILE);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(privateKeyToAccount(readFileSync(file, 'utf8').trim() as Hex).address, wallet);
});

for (const { engine, skip } of engines) {
  describeOnEngine(`refunds from the payout wallet on ${engine}`, skip, () => {
    let env: PayingShop;
    let payout: LocalAccount;
    let apiKey: string;
    let browser: Browser;
    let hook: Awaited<ReturnType<typeof startReceiver>>;
    let signingSecret: string;

    before(async () => {
      env = await startPayingShop(engine, { TILL_RECONCILE_INTERVAL_MS: '200' }, { faultControls: true, workers: true });
      payout = newAccount();
      const merchant = await env.service.merchant({ name: 'Refund Shop', walletAddress: payout.address });
      apiKey = merchant.apiKey;
      hook = await startReceiver();
      ({ signingSecret } = await setWebhook(
        env.service.context.db,
        env.service.config.secretKey,
        merchant.merchantId,
        { url: hook.url, events: ['payment.succeeded', 'refund.succeeded', 'refund.failed'] },
        'sandbox',
      ));
      const email = `refunds-${engine}-${Date.now()}@shop.example`;
      await createUser(env.service.context.db, { merchantId: merchant.merchantId, email, password: 'correct horse battery staple' });
      browser = new Browser(env.service);
      assert.equal((await browser.signIn(email, 'correct horse battery staple')).statusCode, 303);
    });
    afterEach(async () => {
      await env.sandbox.faults.set({ settleFault: 'none' });
    });
    after(async () => {
      await hook?.close();
      await env?.stop();
    });

    const chain = () => createPublicClient({ transport: http(env.sandbox.rpcUrl) });
    const balanceOf = (address: Address) =>
      chain().readContract({ address: env.sandbox.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
    const refundTransfers = (payer: Address) => transfersOnChain(env.sandbox.rpcUrl, env.sandbox.usdcAddress, { from: payout.address, to: payer });

    /** A session paid over x402 by a new buyer: its session, the order's TX- id and the buyer. */
    const paidOrder = async (amount: number) => {
      const sessionId = await createSession(env.baseUrl, apiKey, { amount, currency: 'USD', orderId: `refund-${Math.random()}` });
      const payer = await fundedPayer(env.sandbox, '2');
      const offer = await challenge(env.baseUrl, sessionId);
      const response = await pay(env.baseUrl, sessionId, (await signedPayment(payer, env.sandbox.usdcAddress, offer)).header);
      const answer = (await response.json()) as { paymentId: string };
      assert.equal(response.status, 200, JSON.stringify(answer));
      return { sessionId, orderId: answer.paymentId, payer };
    };

    const csrf = () => browser.csrf('/dashboard/orders');
    const prepare = async (orderId: string, amount: string, as = browser) =>
      as.request('POST', `/dashboard/orders/${orderId}/refund/prepare`, { csrf: await as.csrf('/dashboard/orders'), amount });
    /** Signs the typed data as a wallet's eth_signTypedData_v4 would. */
    const sign = (signer: LocalAccount, typed: TypedData, message: Partial<TypedData['message']> = {}) => {
      const m = { ...typed.message, ...message };
      const { EIP712Domain: _, ...types } = typed.types;
      return signer.signTypedData({
        domain: typed.domain,
        types,
        primaryType: typed.primaryType,
        message: { ...m, value: BigInt(m.value), validAfter: BigInt(m.validAfter), validBefore: BigInt(m.validBefore) },
      });
    };
    /** The dashboard's two steps: prepare, sign with `signer`, post the refund. */
    const refund = async (orderId: string, amount: string, options: { signer?: LocalAccount; validBefore?: string; reason?: string } = {}) =>
      (await signedRefund(orderId, amount, options))();
    /** Prepares and signs a refund; answers the post of it, to be made later. */
    const signedRefund = async (orderId: string, amount: string, options: { signer?: LocalAccount; validBefore?: string; reason?: string } = {}) => {
      const prepared = await prepare(orderId, amount);
      assert.equal(prepared.statusCode, 200, prepared.body);
      const typed = (prepared.json() as { typedData: TypedData }).typedData;
      const validBefore = options.validBefore ?? typed.message.validBefore;
      const signature = await sign(options.signer ?? payout, typed, { validBefore });
      const token = await csrf();
      // The post alone, one request: posts of two refunds made ready this way race each other only.
      return () =>
        browser.request('POST', `/dashboard/orders/${orderId}/refund`, {
          csrf: token,
          amount,
          validBefore,
          nonce: typed.message.nonce,
          signature,
          reason: options.reason ?? 'customer asked',
        });
    };
    const paymentOf = async (sessionId: string): Promise<ApiPayment> => {
      const response = await readSession(env.baseUrl, apiKey, sessionId);
      assert.equal(response.status, 200);
      return ((await response.json()) as { payments: ApiPayment[] }).payments[0]!;
    };
    const fieldOf = (body: string) => (JSON.parse(body) as { error: { field?: string } }).error.field;

    test('a partial refund moves exactly its amount to the payer, ends SUCCEEDED, is read with the session and sent signed; more than the rest is refused', async () => {
      const { sessionId, orderId, payer } = await paidOrder(1);
      const before = await balanceOf(payer.address);
      const answer = await refund(orderId, '0.4');
      assert.equal(answer.statusCode, 303, answer.body);
      assert.match(String(answer.headers.location), /refund=rf_/);

      const payment = await waitFor(async () => {
        const p = await paymentOf(sessionId);
        return p.refunds[0]?.status === 'SUCCEEDED' && p;
      }, 'the refund SUCCEEDED');
      assert.equal(await balanceOf(payer.address), before + 400_000n, 'the payer got exactly the refund');
      const [transfer, ...more] = await refundTransfers(payer.address);
      assert.equal(more.length, 0);
      assert.equal(transfer?.value, 400_000n);
      assert.equal(payment.refunds[0]!.txHash, transfer?.txHash);
      assert.equal(payment.refunds[0]!.amount, 0.4);
      assert.equal(payment.refundedAmount, 0.4);
      assert.equal(payment.refundedTokenAmount, '0.40');

      const delivery = await waitFor(
        () => hook.received.find((r) => JSON.parse(r.body).event === 'refund.succeeded' && JSON.parse(r.body).paymentId === orderId),
        'refund.succeeded',
      );
      const event = new Webhook(signingSecret).verify(delivery.body, delivery.headers as Record<string, string>) as Record<string, unknown>;
      assert.equal(event.paymentSessionId, sessionId);
      assert.equal(event.amount, 0.4);
      assert.equal(event.status, 'SUCCESS');
      assert.deepEqual(event.refund, {
        id: payment.refunds[0]!.id,
        reason: 'customer asked',
        tokenAmount: '0.40',
        transactionHash: transfer?.txHash,
        failureReason: null,
      });

      const receipt = (await (await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${orderId}`)).json()) as Record<string, unknown>;
      assert.equal(receipt.refundedAmount, 0.4);
      assert.equal(receipt.refundedTokenAmount, '0.40');
      assert.deepEqual(
        (receipt.refunds as { transactionHash: string }[]).map((r) => r.transactionHash),
        [transfer?.txHash],
      );
      const receiptPage = await (await fetch(`${env.baseUrl}/checkout/v2/orders/receipt/${orderId}`, { headers: { accept: 'text/html' } })).text();
      assert.match(receiptPage, /<th scope="row">Refunded<\/th><td>0\.40 USD \(0\.40 USDC\)/);
      assert.match(receiptPage, /<span class="tag tag-opt-in">Partially refunded<\/span>/, 'the receipt says it was refunded in part, not "Paid"');
      assert.ok(receiptPage.includes(`href="${env.service.config.explorerTxUrl.replace('{hash}', transfer!.txHash)}"`), 'the refund transaction is linked');
      const orders = await browser.request('GET', `/dashboard/orders?q=${orderId}`);
      assert.match(orders.body, />Partially refunded<\/span><br><span class="note">0\.40 USDC refunded/);
      const csv = (await browser.request('GET', `/dashboard/orders.csv?q=${orderId}`)).body.split('\r\n');
      const column = csv[0]!.split(',').indexOf('refunded_token_amount');
      assert.ok(column > 0, csv[0]);
      assert.equal(csv[1]!.split(',')[column], '0.40', csv[1]);

      const over = await prepare(orderId, '0.61');
      assert.equal(over.statusCode, 400);
      assert.equal(fieldOf(over.body), 'amount');
      // Two refunds of the rest prepared and signed before either is posted: the second is refused when posted.
      const [first, second] = [await signedRefund(orderId, '0.6'), await signedRefund(orderId, '0.6')];
      assert.equal((await first()).statusCode, 303);
      const signedOver = await second();
      assert.equal(signedOver.statusCode, 400, 'nothing is left after 0.4 + 0.6');
      assert.equal(fieldOf(signedOver.body), 'amount');
      await waitFor(async () => (await paymentOf(sessionId)).refunds.every((r) => r.status === 'SUCCEEDED'), 'both refunds SUCCEEDED');
      const all = await refundTransfers(payer.address);
      assert.deepEqual(
        all.map((t) => t.value),
        [400_000n, 600_000n],
        'the refused one moved nothing',
      );
      assert.match((await browser.request('GET', `/dashboard/orders?q=${orderId}`)).body, />Refunded<\/span>/);
    });

    test('two refunds at once whose sum exceeds the payment: exactly one is made', async () => {
      const { sessionId, orderId, payer } = await paidOrder(1);
      // Both prepared and signed first (each prepare rightly sees the whole payment left), then posted at once.
      const [a, b] = [await signedRefund(orderId, '0.7'), await signedRefund(orderId, '0.6')];
      const answers = await Promise.all([a(), b()]);
      assert.deepEqual(answers.map((a) => a.statusCode).sort(), [303, 400], answers.map((a) => a.body).join(' | '));
      assert.equal(fieldOf(answers.find((a) => a.statusCode === 400)!.body), 'amount');
      await waitFor(async () => (await paymentOf(sessionId)).refunds[0]?.status === 'SUCCEEDED', 'the one refund SUCCEEDED');
      const payment = await paymentOf(sessionId);
      assert.equal(payment.refunds.length, 1);
      assert.equal((await refundTransfers(payer.address)).length, 1);
    });

    test("a refund signed by another key than the payout wallet is refused naming the signature; another merchant's order is 404", async () => {
      const { sessionId, orderId, payer } = await paidOrder(0.5);
      const forged = await refund(orderId, '0.1', { signer: newAccount() });
      assert.equal(forged.statusCode, 400, forged.body);
      assert.equal(fieldOf(forged.body), 'signature');
      assert.deepEqual((await paymentOf(sessionId)).refunds, []);
      assert.equal((await refundTransfers(payer.address)).length, 0);

      const other = await env.service.merchant({ walletAddress: newAccount().address });
      const email = `other-${engine}-${Date.now()}@shop.example`;
      await createUser(env.service.context.db, { merchantId: other.merchantId, email, password: 'correct horse battery staple' });
      const stranger = new Browser(env.service);
      await stranger.signIn(email, 'correct horse battery staple');
      const answer = await prepare(orderId, '0.1', stranger);
      assert.equal(answer.statusCode, 404, answer.body);
      const posted = await stranger.request('POST', `/dashboard/orders/${orderId}/refund`, { csrf: await stranger.csrf('/dashboard/orders'), amount: '0.1' });
      assert.equal(posted.statusCode, 404, posted.body);
    });

    test('a refund whose authorization expires unused ends FAILED, with its event, and gives its amount back', async () => {
      const { sessionId, orderId, payer } = await paidOrder(0.5);
      await env.sandbox.faults.set({ settleFault: 'refuse' });
      const validBefore = String(Math.floor(Date.now() / 1000) + 12);
      const answer = await refund(orderId, '0.5', { validBefore });
      assert.equal(answer.statusCode, 303, answer.body);
      assert.equal((await paymentOf(sessionId)).refunds[0]?.status, 'PENDING');
      // The chain's clock moved past validBefore (a block mined 13 s ahead): the reconciler reads the authorization unused there.
      await env.sandbox.chain.increaseTime(13);
      await waitFor(async () => (await paymentOf(sessionId)).refunds[0]?.status === 'FAILED', 'the refund FAILED');
      const delivery = await waitFor(
        () => hook.received.find((r) => JSON.parse(r.body).event === 'refund.failed' && JSON.parse(r.body).paymentId === orderId),
        'refund.failed',
      );
      assert.equal((JSON.parse(delivery.body) as { status: string }).status, 'FAILED');
      assert.equal((await refundTransfers(payer.address)).length, 0);
      await env.sandbox.faults.set({ settleFault: 'none' });
      assert.equal((await prepare(orderId, '0.5')).statusCode, 200, 'a failed refund holds nothing back');
    });

    // Last: it empties the payout wallet.
    test('a refund the facilitator refuses is not FAILED while its authorization can still move money: PENDING, holding its amount back; relayed later, the chain makes it SUCCEEDED and no second refund is possible', async () => {
      const { sessionId, orderId, payer } = await paidOrder(0.5);
      // The payout wallet spends all it holds elsewhere first, gaslessly too: the facilitator's verify refuses the refund.
      const held = await balanceOf(payout.address);
      const sink = newAccount().address;
      const auth = authorization(payout.address, sink, held);
      const requirements = exactRequirements(env.sandbox.usdcAddress, sink, held);
      const payload = paymentPayload(requirements, await signAuthorization(payout, env.sandbox.usdcAddress, auth), auth, {
        url: 'https://shop.example/elsewhere',
        description: 'elsewhere',
      });
      const spent = await createFacilitator({ url: env.sandbox.facilitatorUrl, headers: {}, settleTimeoutMs: 30_000 }).settle(payload, requirements);
      assert.equal(spent.kind, 'settled', JSON.stringify(spent));
      assert.equal(await balanceOf(payout.address), 0n);

      const prepared = await prepare(orderId, '0.5');
      const typed = (prepared.json() as { typedData: TypedData }).typedData;
      const signature = await sign(payout, typed);
      const answer = await browser.request('POST', `/dashboard/orders/${orderId}/refund`, {
        csrf: await csrf(),
        amount: '0.5',
        validBefore: typed.message.validBefore,
        nonce: typed.message.nonce,
        signature,
        reason: 'customer asked',
      });
      assert.equal(answer.statusCode, 303, answer.body);
      assert.match(String(answer.headers.location), /refundStatus=PENDING/);
      const [made] = (await paymentOf(sessionId)).refunds;
      assert.equal(made?.status, 'PENDING', 'the signed authorization can still be relayed by anyone holding it');
      const row = await env.service.context.db.selectFrom('refunds').select('last_error').where('id', '=', made!.id).executeTakeFirstOrThrow();
      assert.match(row.last_error ?? '', /refused by the facilitator before settling .*the chain decides/);
      // What it may still move is held back: the dashboard offers nothing more to refund.
      const again = await prepare(orderId, '0.5');
      assert.equal(again.statusCode, 400, again.body);
      assert.match(again.body, /nothing is left to refund/);

      // The payout wallet is funded again and the refused authorization is relayed after all.
      await env.sandbox.fund(payout.address, '1');
      const relayed = await submitAuthorization(
        env.sandbox.chain,
        {
          from: typed.message.from,
          to: typed.message.to,
          value: BigInt(typed.message.value),
          validAfter: BigInt(typed.message.validAfter),
          validBefore: BigInt(typed.message.validBefore),
          nonce: typed.message.nonce,
        },
        signature,
      );
      assert.equal(relayed.status, 'success');
      await waitFor(async () => (await paymentOf(sessionId)).refunds[0]?.status === 'SUCCEEDED', 'the chain to decide the refund SUCCEEDED');
      await waitFor(
        () => hook.received.find((r) => JSON.parse(r.body).event === 'refund.succeeded' && JSON.parse(r.body).paymentId === orderId),
        'refund.succeeded',
      );
      const transfers = await refundTransfers(payer.address);
      assert.equal(transfers.length, 1);
      assert.equal(transfers[0]?.txHash, (await paymentOf(sessionId)).refunds[0]?.txHash, 'the session read names the transfer on chain');
      assert.equal(Number((await paymentOf(sessionId)).refundedTokenAmount), 0.5);
      const after = await prepare(orderId, '0.5');
      assert.equal(after.statusCode, 400, 'refunded once, on chain and in every view');
    });
  });
}
