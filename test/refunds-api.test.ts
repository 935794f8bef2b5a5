// Refunds over the payment API, end to end on the sandbox chain and facilitator: a merchant's server
// prepares a refund, signs the typed data with its payout wallet's key (viem), submits it, and reads
// what the chain decided; with an API key and with client-credentials tokens (narrowed by scope or
// not); and every refusal (another merchant's or mode's payment, another payment's signature,
// another key's, more than is left, malformed ids) a 4xx naming its field with nothing moved.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Address, createPublicClient, erc20Abi, type Hex, http, type LocalAccount } from 'viem';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { createClient } from '../src/oauth/clients.ts';
import { transfersOnChain } from '../src/testing/buyer.ts';
import { describeOnEngine, engines, type PayingService, startPayingService } from '../src/testing/harness.ts';
import { newAccount } from '../src/testing/payer.ts';
import { paidOrder as paidOrderOf, signRefund } from '../src/testing/refunds.ts';
import { waitFor } from '../src/testing/wait.ts';

type TypedData = {
  domain: { name: string; version: string; chainId: number; verifyingContract: Address };
  types: Record<string, { name: string; type: string }[]>;
  primaryType: 'TransferWithAuthorization';
  message: { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex };
};
type Prepared = { paymentId: string; amount: string; typedData: TypedData; validFrom: string; validBefore: string; submit: Record<string, string> };
type ApiRefund = {
  id: string;
  paymentId: string;
  status: string;
  tokenAmount: string;
  transactionHash: string | null;
  origin: string;
  from: string;
  to: string;
};
type ApiError = { error: { code: string; field?: string; message: string } };

for (const { engine, skip } of engines) {
  describeOnEngine(`refunds over the payment API on ${engine}`, skip, () => {
    let env: PayingService;
    let payout: LocalAccount;
    let merchantId: string;
    let apiKey: string;
    let otherKey: string;
    let liveKey: string;

    before(async () => {
      // Both modes served, so a live key authenticates beside the test one.
      env = await startPayingService(engine, { TILL_RECONCILE_INTERVAL_MS: '200' }, { workers: true, modes: ['sandbox', 'live'] });
      payout = newAccount();
      ({ merchantId, apiKey } = await env.service.merchant({ name: 'API Refund Shop', walletAddress: payout.address }));
      otherKey = (await env.service.merchant({ name: 'Another Shop', walletAddress: newAccount().address })).apiKey;
      liveKey = (await createApiKey(env.service.context.db, merchantId, 'live')).apiKey;
    });
    after(async () => {
      await env?.stop();
    });

    const call = async (method: string, path: string, auth: { apiKey?: string; token?: string }, body?: unknown) => {
      const response = await fetch(`${env.baseUrl}${path}`, {
        method,
        headers: {
          ...(auth.apiKey ? { 'x-sc-apikey': auth.apiKey } : {}),
          ...(auth.token ? { authorization: `Bearer ${auth.token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    const prepare = (auth: { apiKey?: string; token?: string }, paymentId: string, amount: string) =>
      call('POST', `/api/checkout/v2/payments/${paymentId}/refunds/prepare`, auth, { amount });
    const submit = (auth: { apiKey?: string; token?: string }, body: Record<string, unknown>) => call('POST', '/api/checkout/v2/refunds', auth, body);
    const refusal = (answer: { status: number; body: unknown }) => ({ status: answer.status, ...(answer.body as ApiError).error });

    const chain = () => createPublicClient({ transport: http(env.sandbox.rpcUrl) });
    const balanceOf = (address: Address) =>
      chain().readContract({ address: env.sandbox.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
    const refundTransfers = (payer: Address) => transfersOnChain(env.sandbox.rpcUrl, env.sandbox.usdcAddress, { from: payout.address, to: payer });

    const paidOrder = (key = apiKey) => paidOrderOf(env, key);
    const tokenFor = async (scope?: string) => {
      const client = await createClient(env.service.context.db, merchantId, 'sandbox');
      const response = await fetch(`${env.baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, ...(scope ? { scope } : {}) }),
      });
      const answer = (await response.json()) as { access_token: string; scope?: string; error?: string };
      return { status: response.status, ...answer };
    };
    /** Prepares, signs with `signer` (the payout wallet unless told) and submits a refund. */
    const refund = async (auth: { apiKey?: string; token?: string }, paymentId: string, amount: string, signer = payout) => {
      const prepared = await prepare(auth, paymentId, amount);
      assert.equal(prepared.status, 200, JSON.stringify(prepared.body));
      const { typedData, submit: fields } = prepared.body as Prepared;
      return submit(auth, { ...fields, signature: await signRefund(signer, typedData), reason: 'returned by the buyer' });
    };
    const decided = (auth: { apiKey?: string; token?: string }, refundId: string) =>
      waitFor(async () => {
        const read = await call('GET', `/api/checkout/v2/refunds/${refundId}`, auth);
        const body = read.body as ApiRefund;
        return body.status !== 'PENDING' && body;
      }, `refund ${refundId} decided`);

    test('with an API key: prepare answers the typed data and its window, the signed refund moves exactly its amount, and it is read and listed', async () => {
      const { paymentId, payer, sessionId } = await paidOrder();
      const prepared = await prepare({ apiKey }, paymentId, '0.3');
      assert.equal(prepared.status, 200, JSON.stringify(prepared.body));
      const body = prepared.body as Prepared;
      assert.equal(body.typedData.primaryType, 'TransferWithAuthorization');
      assert.equal(body.typedData.message.from, payout.address);
      assert.equal(body.typedData.message.to, payer.address);
      assert.equal(body.typedData.message.value, '300000');
      assert.equal(body.typedData.domain.verifyingContract.toLowerCase(), env.sandbox.usdcAddress.toLowerCase());
      const window = Date.parse(body.validBefore) - Date.parse(body.validFrom);
      assert.ok(window > 590_000 && window <= 600_000, `a 10-minute window: ${window} ms`);
      assert.equal(BigInt(body.submit.validBefore!), BigInt(Date.parse(body.validBefore) / 1000));

      const balance = await balanceOf(payer.address);
      const made = await submit({ apiKey }, { ...body.submit, signature: await signRefund(payout, body.typedData) });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const created = made.body as ApiRefund;
      assert.match(created.id, /^rf_/);
      assert.equal(created.paymentId, paymentId);
      assert.equal(created.origin, 'api');
      assert.equal(created.from, payout.address);
      const final = await decided({ apiKey }, created.id);
      assert.equal(final.status, 'SUCCEEDED');
      assert.equal(await balanceOf(payer.address), balance + 300_000n, 'the payer got exactly the refund');
      const transfers = await refundTransfers(payer.address);
      assert.deepEqual(
        transfers.map((t) => [t.value, t.txHash]),
        [[300_000n, final.transactionHash]],
      );

      const listed = await call('GET', `/api/checkout/v2/refunds?paymentId=${paymentId}`, { apiKey });
      assert.equal(listed.status, 200);
      assert.deepEqual(
        (listed.body as { refunds: ApiRefund[] }).refunds.map((r) => r.id),
        [created.id],
      );
      const bySession = await call('GET', `/api/checkout/v2/refunds?paymentSessionId=${sessionId}&status=SUCCEEDED`, { apiKey });
      assert.deepEqual(
        (bySession.body as { refunds: ApiRefund[] }).refunds.map((r) => r.id),
        [created.id],
      );
      // The session read shows it as the dashboard's refunds are shown.
      const session = (await (await fetch(`${env.baseUrl}/api/checkout/v2/payment_session/${sessionId}`, { headers: { 'x-sc-apikey': apiKey } })).json()) as {
        payments: { refundedTokenAmount: string }[];
      };
      assert.equal(session.payments[0]!.refundedTokenAmount, '0.30');
    });

    test('with client credentials: a token without scope refunds; one narrowed to refunds:read reads but may not refund; an unknown scope is refused', async () => {
      const { paymentId, payer } = await paidOrder();
      const full = await tokenFor();
      assert.equal(full.status, 200);
      const made = await refund({ token: full.access_token }, paymentId, '0.2');
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.equal((await decided({ token: full.access_token }, (made.body as ApiRefund).id)).status, 'SUCCEEDED');

      const writer = await tokenFor('refunds:write');
      assert.equal(writer.scope, 'refunds:write');
      const second = await refund({ token: writer.access_token }, paymentId, '0.1');
      assert.equal(second.status, 201, JSON.stringify(second.body));
      // Reading takes refunds:read: the full token follows the refund.
      await decided({ token: full.access_token }, (second.body as ApiRefund).id);

      const reader = await tokenFor('refunds:read');
      assert.equal(reader.scope, 'refunds:read');
      assert.deepEqual(
        ((await call('GET', `/api/checkout/v2/refunds?paymentId=${paymentId}`, { token: reader.access_token })).body as { refunds: ApiRefund[] }).refunds
          .length,
        2,
      );
      const refused = refusal(await prepare({ token: reader.access_token }, paymentId, '0.1'));
      assert.equal(refused.status, 403);
      assert.equal(refused.code, 'insufficient_scope');
      assert.match(refused.message, /refunds:write/);
      assert.equal((await tokenFor('refunds:delete')).error, 'invalid_scope');
      const transfers = await refundTransfers(payer.address);
      assert.deepEqual(transfers.map((t) => t.value).sort(), [100_000n, 200_000n]);
    });

    test("another merchant's payment and a live key's view of a test payment are not found; nothing moves", async () => {
      const { paymentId, payer } = await paidOrder();
      for (const key of [otherKey, liveKey]) {
        const prepared = refusal(await prepare({ apiKey: key }, paymentId, '0.1'));
        assert.equal(prepared.status, 404, JSON.stringify(prepared));
        assert.equal(prepared.code, 'not_found');
      }
      // A refund prepared and signed for real, submitted with the other credentials.
      const good = await prepare({ apiKey }, paymentId, '0.1');
      const { typedData, submit: fields } = good.body as Prepared;
      const signature = await signRefund(payout, typedData);
      for (const key of [otherKey, liveKey]) assert.equal((await submit({ apiKey: key }, { ...fields, signature })).status, 404);
      assert.deepEqual(await refundTransfers(payer.address), []);
      assert.deepEqual(((await call('GET', `/api/checkout/v2/refunds?paymentId=${paymentId}`, { apiKey })).body as { refunds: unknown[] }).refunds, []);
    });

    test('bad input is a 400 naming the field, and nothing is recorded or moved', async () => {
      const first = await paidOrder();
      const second = await paidOrder();
      const prepared = (await prepare({ apiKey }, first.paymentId, '0.5')).body as Prepared;
      const signature = await signRefund(payout, prepared.typedData);
      const cases: [string, Promise<{ status: number; body: unknown }>, number, string | undefined][] = [
        // The signature of a refund of the first payment, posted for the second.
        ['another payment', submit({ apiKey }, { ...prepared.submit, paymentId: second.paymentId, signature }), 400, 'signature'],
        ['another key', submit({ apiKey }, { ...prepared.submit, signature: await signRefund(newAccount(), prepared.typedData) }), 400, 'signature'],
        ['another amount', submit({ apiKey }, { ...prepared.submit, amount: '0.4', signature }), 400, 'signature'],
        ['over the rest', prepare({ apiKey }, first.paymentId, '1.01'), 400, 'amount'],
        ['over the rest, submitted', submit({ apiKey }, { ...prepared.submit, amount: '1.5', signature }), 400, 'amount'],
        ['a malformed amount', prepare({ apiKey }, first.paymentId, '0.1234567'), 400, 'amount'],
        ['a malformed payment id', prepare({ apiKey }, 'TX-nope', '0.1'), 400, 'paymentId'],
        ['a malformed payment id, submitted', submit({ apiKey }, { ...prepared.submit, paymentId: 'order-1', signature }), 400, 'paymentId'],
        ['a malformed signature', submit({ apiKey }, { ...prepared.submit, signature: '0x1234' }), 400, 'signature'],
        ['a malformed nonce', submit({ apiKey }, { ...prepared.submit, nonce: '0x12', signature }), 400, 'nonce'],
        ['an unknown field', submit({ apiKey }, { ...prepared.submit, signature, payTo: payout.address }), 400, 'payTo'],
        ['a malformed refund id', call('GET', '/api/checkout/v2/refunds/refund-1', { apiKey }), 400, 'refundId'],
        ['an unknown refund', call('GET', '/api/checkout/v2/refunds/rf_AAAAAAAAAAAAAAAAAAAAAA', { apiKey }), 404, undefined],
        ['a foreign cursor', call('GET', '/api/checkout/v2/refunds?cursor=abc', { apiKey }), 400, 'cursor'],
        ['an unknown status', call('GET', '/api/checkout/v2/refunds?status=DONE', { apiKey }), 400, 'status'],
      ];
      for (const [what, answer, status, field] of cases) {
        const got = refusal(await answer);
        assert.equal(got.status, status, `${what}: ${JSON.stringify(got)}`);
        assert.equal(got.field, field, `${what}: ${JSON.stringify(got)}`);
      }
      for (const { payer, paymentId } of [first, second]) {
        assert.deepEqual(await refundTransfers(payer.address), [], 'nothing moved');
        assert.deepEqual(((await call('GET', `/api/checkout/v2/refunds?paymentId=${paymentId}`, { apiKey })).body as { refunds: unknown[] }).refunds, []);
      }
    });
  });
}
