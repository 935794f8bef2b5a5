// The typed client against a running Till, as a merchant's server uses it: sessions created,
// updated, read and listed with an API key and with a client-credentials token; events listed and
// read; a real webhook delivery verified (and a tampered one refused) by the client's helper.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createClient as createOAuthClient } from '../../../src/oauth/clients.ts';
import { everyRouteDocument } from '../../../src/testing/api-document.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../../../src/testing/harness.ts';
import { setWebhook } from '../../../src/webhooks/endpoints.ts';
import { createTillClient, isTillEvent, type TillClient, verifyWebhook, WebhookVerificationError } from '../src/index.ts';

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
      client = createTillClient({ baseUrl: service.baseUrl, apiKey: merchant.apiKey });
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
}

// The payment API has no refund operation yet (refunds are made from the dashboard). When one is
// added, this fails until the client's refund calls are tested above like the sessions' are.
test('the client is tested on every refund operation of the API', async () => {
  const { paths } = (await everyRouteDocument()) as { paths: Record<string, unknown> };
  const refundPaths = Object.keys(paths).filter((path) => /refund/i.test(path));
  assert.deepEqual(refundPaths, [], 'the API has refund operations now: test them with the client in this file, then list them here');
});
