// E1's limit per API key, as a merchant's server meets it over HTTP: counted across instances (in the
// database), 429 `rate_limited` with Retry-After past it, each key on its own, open again next minute.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiKey } from '../merchants/api-keys.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';

const PER_MINUTE = 3;

for (const { engine, skip } of engines) {
  describeOnEngine(`E1's limit per API key on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
    before(async () => {
      service = await startListeningTestService(engine, { TILL_SESSIONS_PER_MINUTE_PER_KEY: String(PER_MINUTE) }, { now: () => clock });
    });
    after(() => service?.stop());

    const e1 = (apiKey: string, orderId?: string) =>
      fetch(`${service.baseUrl}/api/checkout/v2/payment_session`, {
        method: 'POST',
        headers: { 'x-sc-apikey': apiKey, 'content-type': 'application/json', ...(orderId ? { 'idempotency-key': orderId } : {}) },
        body: JSON.stringify({ amount: 1, currency: 'USD', ...(orderId ? { orderId } : {}) }),
      });

    test('a key creates its sessions a minute up to the limit, then 429 with Retry-After; another key is not held back; the next minute opens again', async () => {
      const { apiKey, merchantId } = await service.merchant({ walletAddress: `0x${'ab'.repeat(20)}` });
      clock += 10_000;
      // One after another: the count is exact. (Racing requests on PostgreSQL may pass it by the few in
      // flight: the key's count is spread over rows summed as committed, docs/decisions.md.)
      const answers: Response[] = [];
      for (let i = 0; i < PER_MINUTE + 2; i++) answers.push(await e1(apiKey, i % 2 ? `order-${i}` : undefined));
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [...Array(PER_MINUTE).fill(201), 429, 429]);
      const refused = answers.find((answer) => answer.status === 429)!;
      assert.equal(refused.headers.get('retry-after'), '50');
      const body = (await refused.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'rate_limited');
      assert.match(body.error.message, /payment sessions created with this API key/);
      const sessions = await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(sessions.length, PER_MINUTE, 'a refused request creates nothing');

      const other = await createApiKey(service.context.db, merchantId, 'test');
      assert.equal((await e1(other.apiKey)).status, 201, 'each key has its own count');
      assert.equal((await e1('sk_test_unknown')).status, 401, 'an unknown key is refused as such');
      clock += 50_000;
      assert.equal((await e1(apiKey)).status, 201, 'a new minute');
    });
  });
}
