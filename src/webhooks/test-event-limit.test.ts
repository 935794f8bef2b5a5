// Webhook test events are limited per merchant, from the API and the dashboard together: past the
// limit, 429 `rate_limited` with Retry-After, and nothing is queued; other merchants are not held back.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiKey } from '../merchants/api-keys.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';
import { csrfField, signedInMerchant } from '../testing/page-browser.ts';
import { setWebhook } from './endpoints.ts';

const TEST_EVENTS_PER_HOUR = 20;

for (const { engine, skip } of engines) {
  describeOnEngine(`webhook test events per merchant on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
    before(async () => {
      service = await startListeningTestService(engine, {}, { now: () => clock });
    });
    after(() => service?.stop());

    const sendTest = (apiKey: string) => fetch(`${service.baseUrl}/api/checkout/v2/webhooks/test`, { method: 'POST', headers: { 'x-sc-apikey': apiKey } });
    const withEndpoint = async () => {
      const merchant = await signedInMerchant(service);
      await setWebhook(service.context.db, service.config.secretKey, merchant.merchantId, { url: 'http://127.0.0.1:9/hook' }, 'sandbox', clock);
      const { apiKey } = await createApiKey(service.context.db, merchant.merchantId, 'test', clock);
      return { ...merchant, apiKey };
    };
    const queued = async (merchantId: string) =>
      (await service.context.db.selectFrom('webhook_events').select('id').where('merchant_id', '=', merchantId).where('type', '=', 'webhook.test').execute())
        .length;

    test('the API and the dashboard share one count an hour; past it 429 with Retry-After and nothing queued; another merchant is not held back', async () => {
      const merchant = await withEndpoint();
      const statuses: number[] = [];
      for (let i = 0; i < TEST_EVENTS_PER_HOUR - 1; i++) statuses.push((await sendTest(merchant.apiKey)).status);
      assert.deepEqual(new Set(statuses), new Set([202]));
      const page = await merchant.browser.request('GET', '/dashboard/notifications');
      const last = await merchant.browser.request('POST', '/dashboard/notifications/test', { csrf: csrfField(page.body) });
      assert.equal(last.statusCode, 303, 'the last one of the hour, from the dashboard');
      const refused = await sendTest(merchant.apiKey);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '3600');
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'rate_limited');
      const refusedPage = await merchant.browser.request('POST', '/dashboard/notifications/test', { csrf: csrfField(page.body) });
      assert.equal(refusedPage.statusCode, 429);
      assert.equal(refusedPage.headers['retry-after'], '3600');
      assert.match(refusedPage.body, /Test events are limited to 20 an hour: try again in 60 minutes\./);
      assert.equal(await queued(merchant.merchantId), TEST_EVENTS_PER_HOUR);

      const other = await withEndpoint();
      assert.equal((await sendTest(other.apiKey)).status, 202, 'another merchant');
      clock += 60 * 60_000;
      assert.equal((await sendTest(merchant.apiKey)).status, 202, 'the next hour');
    });
  });
}
