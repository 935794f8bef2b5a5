// What an operator and a merchant's server see of the service's own protections over real HTTP:
// /metrics behind TILL_METRICS_TOKEN (closed in live mode without it), `Cache-Control: no-store` on
// every API answer that may carry a secret or payment data, and TILL_TRUST_PROXY taking a number of
// hops or the proxies' addresses, never every hop.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError, loadConfig } from '../config.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';

const TOKEN = 'm'.repeat(40);
type Listening = TestService & { baseUrl: string };

for (const { engine, skip } of engines) {
  describeOnEngine(`service headers over HTTP on ${engine}`, skip, () => {
    let open: Listening;
    let guarded: Listening;
    let live: Listening;
    before(async () => {
      [open, guarded, live] = await Promise.all([
        startListeningTestService(engine),
        startListeningTestService(engine, { TILL_METRICS_TOKEN: TOKEN }),
        startListeningTestService(engine, { TILL_FACILITATOR_URL: 'https://facilitator.invalid' }),
      ]);
    });
    after(() => Promise.all([open?.stop(), guarded?.stop(), live?.stop()]));

    test('/metrics: open in the sandbox without a token; with TILL_METRICS_TOKEN only for that bearer; closed in live mode without one', async () => {
      const scrape = (service: Listening, authorization?: string) => fetch(`${service.baseUrl}/metrics`, { headers: authorization ? { authorization } : {} });
      const sandbox = await scrape(open);
      assert.equal(sandbox.status, 200);
      assert.match(await sandbox.text(), /till_/);
      for (const authorization of [undefined, `Bearer ${'x'.repeat(40)}`, `Basic ${TOKEN}`, TOKEN]) {
        const refused = await scrape(guarded, authorization);
        assert.equal(refused.status, 401, String(authorization));
        assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="metrics"');
        assert.doesNotMatch(await refused.text(), /till_/);
      }
      const allowed = await scrape(guarded, `Bearer ${TOKEN}`);
      assert.equal(allowed.status, 200);
      assert.equal(allowed.headers.get('cache-control'), 'no-store');
      assert.match(await allowed.text(), /till_http_request_duration_seconds|till_/);
      assert.equal(live.config.mode, 'live');
      const closed = await scrape(live);
      assert.equal(closed.status, 403);
      assert.match(await closed.text(), /TILL_METRICS_TOKEN/);
    });

    test('E1, E2, the session read, webhook deliveries and the token endpoint answer with Cache-Control: no-store, refusals too', async () => {
      const { apiKey } = await open.merchant({ walletAddress: `0x${'ab'.repeat(20)}` });
      const api = (method: string, path: string, body?: unknown, key = apiKey) =>
        fetch(`${open.baseUrl}${path}`, {
          method,
          headers: { 'x-sc-apikey': key, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
      const created = await api('POST', '/api/checkout/v2/payment_session', { amount: 2, currency: 'USD' });
      assert.equal(created.status, 201);
      const { sessionId } = (await created.json()) as { sessionId: string };
      const answers = {
        e1: created,
        e2: await api('PUT', '/api/checkout/v2/payment_session', { sessionId, amount: 3 }),
        read: await api('GET', `/api/checkout/v2/payment_session/${sessionId}`),
        deliveries: await api('GET', '/api/checkout/v2/webhooks/deliveries'),
        refused: await api('GET', `/api/checkout/v2/payment_session/${sessionId}`, undefined, 'sk_test_wrong'),
        token: await fetch(`${open.baseUrl}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'client_credentials', client_id: 'cli_unknown', client_secret: 'cs_unknown' }),
        }),
      };
      for (const [name, answer] of Object.entries(answers)) {
        assert.ok(answer.status < 500, `${name}: ${answer.status}`);
        assert.equal(answer.headers.get('cache-control'), 'no-store', name);
      }
      assert.equal(answers.e2.status, 200);
      assert.equal(answers.read.status, 200);
      // Pages and public documents keep their own caching.
      const stylesheet = await fetch(`${open.baseUrl}/assets/till.css`);
      assert.notEqual(stylesheet.headers.get('cache-control'), 'no-store');
    });
  });
}

test('TILL_TRUST_PROXY takes false, a number of hops or the proxies’ addresses, and refuses true', () => {
  const trust = (value: string) => loadConfig({ TILL_TRUST_PROXY: value, TILL_DATA_DIR: '/tmp/till-config-test' }).trustProxy;
  assert.equal(trust('false'), false);
  assert.equal(trust('2'), 2);
  assert.deepEqual(trust('10.0.0.5, 10.0.1.0/24,::1'), ['10.0.0.5', '10.0.1.0/24', '::1']);
  for (const value of ['true', '0', '11', 'proxy.example', '10.0.0.5,'])
    assert.throws(
      () => trust(value),
      (error: unknown) => error instanceof ConfigError && /TILL_TRUST_PROXY/.test(error.message),
      value,
    );
});
