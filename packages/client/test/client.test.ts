// The typed client against a running Till, as a merchant's server uses it: sessions created,
// updated, read and listed with an API key and with a client-credentials token; events listed and
// read; a real webhook delivery verified (and a tampered one refused) by the client's helper; and a
// refund of a payment made on the sandbox chain: prepared, signed by the payout wallet, submitted,
// read, listed and seen on the chain, and one refused by name.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Address, LocalAccount } from 'viem';
import { createClient as createOAuthClient } from '../../../src/oauth/clients.ts';
import { everyRouteDocument } from '../../../src/testing/api-document.ts';
import { transfersOnChain } from '../../../src/testing/buyer.ts';
import {
  describeOnEngine,
  engines,
  type PayingService,
  startListeningTestService,
  startPayingService,
  type TestService,
} from '../../../src/testing/harness.ts';
import { newAccount } from '../../../src/testing/payer.ts';
import { paidOrder, signRefund } from '../../../src/testing/refunds.ts';
import { waitFor } from '../../../src/testing/wait.ts';
import { setWebhook } from '../../../src/webhooks/endpoints.ts';
import { createTillClient, isTillEvent, type TillClient, verifyWebhook, WebhookVerificationError } from '../src/index.ts';

/** Every operation a client of this file called ("POST /api/…/{paymentId}/…"), as its document path names it. */
const exercised = new Set<string>();
const recording = (client: TillClient) => {
  client.use({
    onRequest({ request, schemaPath }) {
      exercised.add(`${request.method} ${schemaPath}`);
    },
  });
  return client;
};

type Delivery = { body: string; headers: IncomingHttpHeaders };

/** A merchant's webhook endpoint on this machine, keeping what it receives. */
async function receiver() {
  const deliveries: Delivery[] = [];
  const waiting: ((delivery: Delivery) => void)[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const delivery = { body: Buffer.concat(chunks).toString('utf8'), headers: request.headers };
      deliveries.push(delivery);
      waiting.shift()?.(delivery);
      response.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    next: () => new Promise<Delivery>((resolve) => (deliveries.length ? resolve(deliveries.shift()!) : waiting.push(resolve))),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`@till/client against Till (${engine})`, skip, () => {
    let service: TestService & { baseUrl: string };
    let merchantId: string;
    let client: TillClient;
    before(async () => {
      service = await startListeningTestService(engine, {}, { workers: true });
      const merchant = await service.merchant({ name: 'Client Shop', walletAddress: '0x1111111111111111111111111111111111111111' });
      merchantId = merchant.merchantId;
      client = recording(createTillClient({ baseUrl: service.baseUrl, apiKey: merchant.apiKey }));
    });
    after(() => service?.stop());

    test('creates (E1), updates (E2), reads and lists a session, each answer typed', async () => {
      const created = await client.POST('/api/checkout/v2/payment_session', {
        body: { amount: 12.5, currency: 'USD', orderId: `order-${engine}-1`, concept: 'Two coffees', orderType: 'STATIC' },
      });
      assert.equal(created.response.status, 201, JSON.stringify(created.error));
      const sessionId = created.data!.sessionId;
      assert.match(created.data!.redirectUrl, new RegExp(`/checkout/pay\\?uid=${sessionId}$`));

      const updated = await client.PUT('/api/checkout/v2/payment_session', { body: { sessionId, amount: 15, concept: 'Three coffees' } });
      assert.equal(updated.response.status, 200, JSON.stringify(updated.error));
      assert.equal(updated.data!.sessionId, sessionId);

      const read = await client.GET('/api/checkout/v2/payment_session/{sessionId}', { params: { path: { sessionId } } });
      assert.equal(read.response.status, 200, JSON.stringify(read.error));
      assert.equal(read.data!.amount, 15);
      assert.equal(read.data!.concept, 'Three coffees');
      assert.equal(read.data!.orderId, `order-${engine}-1`);

      const listed = await client.GET('/api/checkout/v2/payment_session', { params: { query: { orderId: `order-${engine}-1` } } });
      assert.equal(listed.response.status, 200, JSON.stringify(listed.error));
      assert.deepEqual(
        listed.data!.sessions.map((session) => session.sessionId),
        [sessionId],
      );
    });

    test('a refusal comes back as the typed error: its code and the field it names', async () => {
      const refused = await client.POST('/api/checkout/v2/payment_session', { body: { amount: -1, currency: 'USD' } });
      assert.equal(refused.response.status, 400);
      assert.equal(refused.data, undefined);
      assert.equal(refused.error!.error.code, 'invalid_field');
      assert.equal(refused.error!.error.field, 'amount');

      const stranger = createTillClient({ baseUrl: service.baseUrl, apiKey: 'sk_test_not-a-key' });
      const unknown = await stranger.GET('/api/checkout/v2/payment_session', {});
      assert.equal(unknown.response.status, 401);
      assert.equal(unknown.error!.error.code, 'unauthorized');
    });

    test('with a client-credentials token instead of a key, fetched when the client calls', async () => {
      const { clientId, clientSecret } = await createOAuthClient(service.context.db, merchantId, 'sandbox');
      let fetched = 0;
      const bearer = createTillClient({
        baseUrl: service.baseUrl,
        accessToken: async () => {
          fetched++;
          const answer = await fetch(`${service.baseUrl}/oauth/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              grant_type: 'client_credentials',
              client_id: clientId,
              client_secret: clientSecret,
              audience: `${service.baseUrl}/checkout`,
            }),
          });
          return ((await answer.json()) as { access_token: string }).access_token;
        },
      });
      const created = await bearer.POST('/api/checkout/v2/payment_session', { body: { amount: 3, currency: 'USD', orderId: `bearer-${engine}` } });
      assert.equal(created.response.status, 201, JSON.stringify(created.error));
      const read = await client.GET('/api/checkout/v2/payment_session/{sessionId}', { params: { path: { sessionId: created.data!.sessionId } } });
      assert.equal(read.data!.orderId, `bearer-${engine}`, 'the session is the same merchant’s');
      assert.equal(fetched, 1);
    });

    test('lists and reads events; an event’s body is a typed Till event', async () => {
      const made = await client.POST('/api/checkout/v2/events/test', { body: { type: 'payment.succeeded' } });
      assert.equal(made.response.status, 201, JSON.stringify(made.error));
      const listed = await client.GET('/api/checkout/v2/events', { params: { query: { type: 'payment.succeeded', limit: 5 } } });
      assert.equal(listed.response.status, 200, JSON.stringify(listed.error));
      const eventId = made.data!.event.id;
      assert.ok(listed.data!.events.some((event) => event.id === eventId));
      const read = await client.GET('/api/checkout/v2/events/{eventId}', { params: { path: { eventId } } });
      assert.equal(read.response.status, 200, JSON.stringify(read.error));
      const body: unknown = JSON.parse(read.data!.body);
      assert.ok(isTillEvent(body, 'payment.succeeded'));
      assert.equal(body.status, 'SUCCESS');
      assert.equal(body.id, eventId);
      assert.ok(!isTillEvent(body, 'session.expired'));
    });

    test('verifyWebhook accepts a delivery Till signed and refuses a tampered one, a wrong secret or key', async () => {
      const endpoint = await receiver();
      try {
        const { webhookKey, signingSecret } = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: endpoint.url }, 'sandbox');
        const queued = await client.POST('/api/checkout/v2/webhooks/test', {});
        assert.equal(queued.response.status, 202, JSON.stringify(queued.error));
        const delivery = await endpoint.next();

        const event = verifyWebhook(delivery.body, delivery.headers, { secret: signingSecret, webhookKey });
        assert.equal(event.event, 'webhook.test');
        assert.equal(event.id, queued.data!.eventId);
        // Several secrets (a rotation's overlap): one that verifies is enough.
        assert.equal(
          verifyWebhook(delivery.body, new Headers(delivery.headers as Record<string, string>), { secret: ['whsec_b2xk', signingSecret] }).id,
          event.id,
        );

        const tampered = delivery.body.replace('"amount":1', '"amount":1000');
        assert.notEqual(tampered, delivery.body);
        assert.throws(() => verifyWebhook(tampered, delivery.headers, { secret: signingSecret }), WebhookVerificationError);
        assert.throws(() => verifyWebhook(delivery.body, delivery.headers, { secret: 'whsec_b2xk' }), WebhookVerificationError);
        assert.throws(() => verifyWebhook(delivery.body, delivery.headers, { secret: signingSecret, webhookKey: 'whk_wrong' }), /X-Webhook-Api-Key/);
      } finally {
        await endpoint.close();
      }
    });
  });

  describeOnEngine(`@till/client refunds a payment made on the sandbox chain (${engine})`, skip, () => {
    let env: PayingService;
    let payout: LocalAccount;
    let apiKey: string;
    let client: TillClient;
    before(async () => {
      env = await startPayingService(engine, { TILL_RECONCILE_INTERVAL_MS: '200' }, { workers: true });
      payout = newAccount();
      ({ apiKey } = await env.service.merchant({ name: 'Client Refund Shop', walletAddress: payout.address }));
      client = recording(createTillClient({ baseUrl: env.baseUrl, apiKey }));
    });
    after(() => env?.stop());

    const refundsOf = async (paymentId: string) => {
      const listed = await client.GET('/api/checkout/v2/refunds', { params: { query: { paymentId } } });
      assert.equal(listed.response.status, 200, JSON.stringify(listed.error));
      return listed.data!.refunds;
    };
    const paidBackOnChain = (payer: Address) => transfersOnChain(env.sandbox.rpcUrl, env.sandbox.usdcAddress, { from: payout.address, to: payer });

    test('prepares a partial refund, signs its typed data with the payout key, submits, reads and lists it; the chain pays the buyer back', async () => {
      const { paymentId, payer } = await paidOrder(env, apiKey);
      const prepared = await client.POST('/api/checkout/v2/payments/{paymentId}/refunds/prepare', {
        params: { path: { paymentId } },
        body: { amount: '0.25' },
      });
      assert.equal(prepared.response.status, 200, JSON.stringify(prepared.error));
      const { typedData, submit } = prepared.data!;
      assert.equal(typedData.message.from, payout.address);
      assert.equal(typedData.message.to, payer.address);
      assert.equal(typedData.message.value, '250000');

      const made = await client.POST('/api/checkout/v2/refunds', {
        body: { ...submit, signature: await signRefund(payout, typedData), reason: 'one coffee returned' },
      });
      assert.equal(made.response.status, 201, JSON.stringify(made.error));
      const refundId = made.data!.id;
      assert.equal(made.data!.paymentId, paymentId);
      assert.equal(made.data!.origin, 'api');

      // Only the chain decides: read the refund until it is no longer PENDING.
      const decided = await waitFor(async () => {
        const read = await client.GET('/api/checkout/v2/refunds/{refundId}', { params: { path: { refundId } } });
        assert.equal(read.response.status, 200, JSON.stringify(read.error));
        return read.data!.status !== 'PENDING' && read.data!;
      }, `refund ${refundId} decided`);
      assert.equal(decided.status, 'SUCCEEDED', decided.lastError ?? '');
      assert.equal(decided.tokenAmount, '0.25');
      assert.equal(decided.reason, 'one coffee returned');
      assert.deepEqual(
        (await paidBackOnChain(payer.address)).map((transfer) => [transfer.value, transfer.txHash]),
        [[250_000n, decided.transactionHash]],
        'the chain shows exactly the refund going from the payout wallet to the buyer',
      );

      assert.deepEqual(
        (await refundsOf(paymentId)).map((refund) => [refund.id, refund.status]),
        [[refundId, 'SUCCEEDED']],
      );
    });

    test('a refund of more than was paid is refused as the typed error naming amount; nothing is recorded or moved', async () => {
      const { paymentId, payer } = await paidOrder(env, apiKey);
      const refused = await client.POST('/api/checkout/v2/payments/{paymentId}/refunds/prepare', { params: { path: { paymentId } }, body: { amount: '1.01' } });
      assert.equal(refused.response.status, 400);
      assert.equal(refused.data, undefined);
      assert.equal(refused.error!.error.field, 'amount');
      assert.match(refused.error!.error.message, /1\.01|left|more/i);

      const unknown = await client.GET('/api/checkout/v2/refunds/{refundId}', { params: { path: { refundId: 'rf_AAAAAAAAAAAAAAAAAAAAAA' } } });
      assert.equal(unknown.response.status, 404);
      assert.equal(unknown.error!.error.code, 'not_found');

      assert.deepEqual(await refundsOf(paymentId), []);
      assert.deepEqual(await paidBackOnChain(payer.address), []);
    });
  });
}

// Every refund operation of the document must be called by a test above: a new one fails this
// until the client is tested on it too.
test('the client is tested on every refund operation of the API', async () => {
  const { paths } = (await everyRouteDocument()) as { paths: Record<string, Record<string, unknown>> };
  const refundOperations = Object.entries(paths)
    .filter(([path]) => /refund/i.test(path))
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .filter((operation) => !operation.startsWith('PARAMETERS '));
  assert.ok(refundOperations.length >= 4, JSON.stringify(refundOperations));
  const untested = refundOperations.filter((operation) => !exercised.has(operation));
  assert.deepEqual(untested, [], 'refund operations no client call in this file made: test them above');
});
