import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { sessionRequest } from '../testing/shop.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`Idempotency-Key under concurrency on ${engine}`, skip, () => {
    let service: TestService;
    let baseUrl: string;
    before(async () => {
      service = await startTestService(engine, { TILL_DATABASE_POOL_SIZE: '12' });
      baseUrl = await service.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => service?.stop());

    test('50 parallel POSTs with one key create exactly one session', async () => {
      const { apiKey, merchantId } = await service.merchant();
      const body = JSON.stringify({ amount: 12.34, currency: 'USD', orderId: 'concurrent-1' });
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          sessionRequest(baseUrl, apiKey, 'POST', body, { 'idempotency-key': 'same-key' }).then(async (r) => ({ status: r.status, body: await r.json() })),
        ),
      );
      const rows = await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(rows.length, 1);
      const sessionId = rows[0]!.id;
      for (const response of responses) {
        if (response.status === 201) assert.equal(response.body.sessionId, sessionId);
        else {
          assert.equal(response.status, 409);
          assert.equal(response.body.error.code, 'idempotency_key_in_use');
        }
      }
      assert.ok(responses.some((r) => r.status === 201));
    });
  });
}
