import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { appendPaymentIdentifierToExtensions, generatePaymentId } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { createPublicClient, getAddress, http, parseAbiItem } from 'viem';
import { claimPayment, findPaymentByIdentifier } from '../src/payments/payments.ts';
import { findSession } from '../src/sessions/sessions.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { newAccount } from '../src/testing/payer.ts';
import { startTcpProxy, type TcpProxy } from '../src/testing/tcp-proxy.ts';

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

for (const { engine, skip } of engines) {
  describeOnEngine(`x402 payment-identifier with the official v2 client on ${engine}`, skip, () => {
    let env: PayingShop;
    let proxy: TcpProxy;
    let throughProxy: string;
    before(async () => {
      env = await startPayingShop(engine);
      proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(env.baseUrl).port) });
      throughProxy = `http://127.0.0.1:${proxy.port}`;
    });
    after(async () => {
      await proxy?.close();
      await env?.stop();
    });

    /** The official client for the sandbox's USDC (a token it does not know by default). */
    const payingClient = (buyer: Awaited<ReturnType<PayingShop['fundedPayer']>>) =>
      new x402Client()
        .register('eip155:8453', new ExactEvmScheme(buyer))
        .setSpendControls({ allowedAssets: [{ network: 'eip155:8453', asset: env.sandbox.usdcAddress }] });

    /** The official client, unmodified, naming every payment `paymentId` as x402's docs show; the nonces it signed. */
    function buyerClient(buyer: Awaited<ReturnType<PayingShop['fundedPayer']>>, paymentId: string) {
      const client = payingClient(buyer);
      client.onBeforePaymentCreation(async ({ paymentRequired }) => {
        if (paymentRequired.extensions) appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId);
      });
      const nonces: string[] = [];
      client.onAfterPaymentCreation(async ({ paymentPayload }) => {
        nonces.push((paymentPayload.payload as { authorization: { nonce: string } }).authorization.nonce);
      });
      return { client, nonces };
    }

    /** Every USDC transfer the chain shows out of `address`. */
    async function transfersFrom(address: string) {
      const chain = createPublicClient({ transport: http(env.sandbox.rpcUrl) });
      return chain.getLogs({ address: env.sandbox.usdcAddress as `0x${string}`, event: TRANSFER, args: { from: getAddress(address) }, fromBlock: 0n });
    }

    test('the challenge declares payment-identifier (optional) in PAYMENT-REQUIRED and in its body', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const response = await fetch(`${env.baseUrl}/x402/session/${sessionId}`);
      assert.equal(response.status, 402);
      const required = JSON.parse(Buffer.from(response.headers.get('payment-required')!, 'base64').toString()) as PaymentRequired;
      const declared = required.extensions?.['payment-identifier'] as { info: { required: boolean } };
      assert.deepEqual(declared.info, { required: false });
      assert.deepEqual((await response.json()).extensions['payment-identifier'], declared);
      assert.equal(required.extensions?.bazaar, undefined, 'a link not made discoverable carries no bazaar description');
    });

    test('an answer lost after the proof was sent: the retry with a new authorization and the same identifier gets the first receipt, and the chain shows one transfer', async () => {
      const sessionId = await env.createSession({ amount: 0.1, currency: 'USD', orderType: 'STATIC' });
      const buyer = await env.fundedPayer('1');
      const merchantBefore = await env.sandbox.balanceOf(env.merchantWallet);
      const paymentId = generatePaymentId();
      const { client, nonces } = buyerClient(buyer, paymentId);
      // The paid request reaches Till, which settles it; its answer never comes back and the connection is cut.
      const lossy: typeof fetch = async (input, init) => {
        const request = new Request(input, init);
        if (request.headers.has('payment-signature')) proxy.loseAnswers();
        return fetch(request);
      };
      const url = `${throughProxy}/x402/session/${sessionId}`;
      const first = wrapFetchWithPayment(lossy, client)(url);
      const db = env.service.context.db;
      for (let i = 0; i < 200; i++) {
        const claimed = await findPaymentByIdentifier(db, paymentId);
        if (claimed?.status === 'SUCCESS') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      proxy.cut();
      await assert.rejects(first, 'the client never got an answer');
      proxy.restore();
      const settled = await findPaymentByIdentifier(db, paymentId);
      assert.equal(settled?.status, 'SUCCESS');

      // The client does not know whether it paid: it asks again, gets a challenge (a reusable link) and signs anew.
      const retry = await wrapFetchWithPayment(fetch, client)(url);
      const body = await retry.json();
      assert.equal(retry.status, 200, JSON.stringify(body));
      assert.equal(nonces.length, 2);
      assert.notEqual(nonces[0], nonces[1], 'the retry signed a new authorization');
      assert.equal(body.paymentId, settled.public_order_id, 'the first receipt');
      assert.ok(body.receipt.endsWith(settled.tx_hash!));
      const settle = new x402HTTPClient(client).getPaymentSettleResponse((name) => retry.headers.get(name));
      assert.equal(settle.transaction, settled.tx_hash);

      const transfers = await transfersFrom(buyer.address);
      assert.equal(transfers.length, 1, 'one transfer on the chain');
      assert.equal(transfers[0]!.args.value, 100_000n);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 900_000n);
      assert.equal((await env.sandbox.balanceOf(env.merchantWallet)) - merchantBefore, 100_000n);
      const session = await (await fetch(`${env.baseUrl}/api/checkout/v2/payment_session/${sessionId}`, { headers: { 'x-sc-apikey': env.apiKey } })).json();
      assert.equal(session.payments.length, 1, 'one order');

      // The same identifier for another session is refused, and nothing moves.
      const other = await env.createSession({ amount: 0.1, currency: 'USD', orderType: 'STATIC' });
      const reused = await wrapFetchWithPayment(fetch, client)(`${env.baseUrl}/x402/session/${other}`);
      assert.equal(reused.status, 409);
      const error = (await reused.json()).error;
      assert.equal(error.code, 'payment_identifier_reused');
      assert.equal(error.field, 'extensions.payment-identifier.info.id');
      assert.match(error.message, /another session/);
      assert.equal((await transfersFrom(buyer.address)).length, 1);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 900_000n);
    });

    test('two racing requests naming one payment settle it once and both get its receipt', async () => {
      const sessionId = await env.createSession({ amount: 0.03, currency: 'USD', orderType: 'STATIC' });
      const buyer = await env.fundedPayer('1');
      const { client, nonces } = buyerClient(buyer, generatePaymentId('race_'));
      const pay = wrapFetchWithPayment(fetch, client);
      const url = `${env.baseUrl}/x402/session/${sessionId}`;
      const answers = await Promise.all([pay(url), pay(url), pay(url)]);
      const bodies = await Promise.all(answers.map((a) => a.json()));
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200, 200],
        JSON.stringify(bodies),
      );
      assert.equal(new Set(nonces).size, 3, 'three authorizations');
      assert.equal(new Set(bodies.map((b) => b.paymentId)).size, 1, 'one payment');
      assert.equal((await transfersFrom(buyer.address)).length, 1);
      assert.equal(await env.sandbox.balanceOf(buyer.address), 970_000n);
    });

    test('two claims naming one identifier at the same instant: the unique index lets exactly one commit', async () => {
      const sessionId = await env.createSession({ amount: 0.04, currency: 'USD', orderType: 'STATIC' });
      await env.challenge(sessionId);
      const { db } = env.service.context;
      const session = (await findSession(db, sessionId))!;
      const quote = await db.selectFrom('payment_quotes').selectAll().where('session_id', '=', sessionId).executeTakeFirstOrThrow();
      const identifier = generatePaymentId('claim_');
      const payer = newAccount().address.toLowerCase();
      const now = Date.now();
      const claim = () =>
        claimPayment(
          env.service.context,
          {
            session,
            quotedVersion: quote.session_version,
            quote_id: quote.id,
            payer,
            pay_to: quote.pay_to.toLowerCase(),
            asset: quote.asset.toLowerCase(),
            value: quote.usdc_amount,
            nonce: `0x${randomBytes(32).toString('hex')}`,
            valid_after: 0n,
            valid_before: BigInt(Math.floor(now / 1000) + 300),
            signature: `0x${randomBytes(65).toString('hex')}`,
            amount_minor: quote.amount_minor,
            currency: quote.currency,
            rate: quote.rate,
            payment_identifier: identifier,
          },
          { now, explorerTxUrl: env.service.config.explorerTxUrl, network: 'base', followUpAt: now },
        );
      const results = await Promise.all([claim(), claim(), claim()]);
      const kinds = results.map((r) => r.kind).sort();
      // A second PENDING payment of one payer on a session breaks its own index too; a loser is still told the identifier is taken.
      assert.equal(kinds.filter((k) => k === 'claimed').length, 1, JSON.stringify(kinds));
      for (const result of results.filter((r) => r.kind !== 'claimed')) assert.equal(result.kind, 'identifier_taken', JSON.stringify(kinds));
      const rows = await db.selectFrom('payments').select('id').where('payment_identifier', '=', identifier).execute();
      assert.equal(rows.length, 1);
    });

    test('the same identifier from another payer, or for another amount, is refused; nothing moves', async () => {
      const sessionId = await env.createSession({ amount: 1, currency: 'USD', orderType: 'STATIC', editable: true });
      const paymentId = generatePaymentId();
      const first = await env.fundedPayer('1');
      const paid = await wrapFetchWithPayment(fetch, buyerClient(first, paymentId).client)(`${env.baseUrl}/x402/session/${sessionId}?amount=0.02`);
      assert.equal(paid.status, 200);

      const otherAmount = await wrapFetchWithPayment(fetch, buyerClient(first, paymentId).client)(`${env.baseUrl}/x402/session/${sessionId}?amount=0.03`);
      assert.equal(otherAmount.status, 409);
      assert.match((await otherAmount.json()).error.message, /another amount/);

      const second = await env.fundedPayer('1');
      const otherPayer = await wrapFetchWithPayment(fetch, buyerClient(second, paymentId).client)(`${env.baseUrl}/x402/session/${sessionId}?amount=0.02`);
      assert.equal(otherPayer.status, 409);
      assert.match((await otherPayer.json()).error.message, /another payer/);
      assert.equal(await env.sandbox.balanceOf(first.address), 980_000n);
      assert.equal(await env.sandbox.balanceOf(second.address), 1_000_000n);
    });

    test('a malformed identifier is refused with a 400 naming it, and nothing is charged', async () => {
      const sessionId = await env.createSession({ amount: 0.02, currency: 'USD', orderType: 'STATIC' });
      const buyer = await env.fundedPayer('1');
      const client = payingClient(buyer);
      const url = `${env.baseUrl}/x402/session/${sessionId}`;
      const cases: [unknown, RegExp][] = [
        ['pay_short', /16 to 128 characters long \(it has 9\)/],
        [`pay_${'a'.repeat(125)}`, /16 to 128 characters long \(it has 129\)/],
        ['pay_7d5d747be160e2!@#', /letters A–Z and a–z, digits, hyphens and underscores/],
        ['pay_7d5d747be160e280 ', /letters/],
        [1234567890123456, /must be a string/],
      ];
      for (const [id, message] of cases) {
        const challenge = await fetch(url);
        const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()) as PaymentRequired;
        const payload: PaymentPayload = await client.createPaymentPayload(required);
        (payload.extensions!['payment-identifier'] as { info: Record<string, unknown> }).info.id = id;
        const response = await fetch(url, { headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } });
        const body = await response.json();
        assert.equal(response.status, 400, `${String(id)}: ${JSON.stringify(body)}`);
        assert.equal(body.error.code, 'invalid_payment_identifier');
        assert.equal(body.error.field, 'extensions.payment-identifier.info.id');
        assert.match(body.error.message, message);
      }
      const challenge = await fetch(url);
      const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()) as PaymentRequired;
      const payload = await client.createPaymentPayload(required);
      payload.extensions!['payment-identifier'] = { info: 'pay_7d5d747be160e280504c099d984bcfe0' };
      const noInfo = await fetch(url, { headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } });
      assert.equal(noInfo.status, 400);
      assert.equal((await noInfo.json()).error.field, 'extensions.payment-identifier.info');
      assert.equal(await env.sandbox.balanceOf(buyer.address), 1_000_000n);
      assert.equal((await transfersFrom(buyer.address)).length, 0);
    });
  });
}
