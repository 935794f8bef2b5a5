import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../config.ts';
import { createService, type Service } from '../main.ts';
import { createApiKey } from '../merchants/api-keys.ts';
import { createServiceStorage } from '../testing/environment.ts';
import { describeOnEngine, engines } from '../testing/harness.ts';
import { createMerchant, createSession } from '../testing/shop.ts';
import { waitFor } from '../testing/wait.ts';
import { setWebhook } from './endpoints.ts';
import type { WebhookEventType } from './event-types.ts';
import { enqueueWebhookEvent, type WebhookSession } from './events.ts';
import { startReceiver } from './fixtures/receiver.ts';
import { startWebhookWorker } from './worker.ts';

const PAYMENT = { id: 'pay_1', amount_minor: 1999n, currency: 'EUR', public_order_id: 'TX-0123456789ABCDEF0123456789ABCDEF', tx_hash: '0xfeed' };
const TYPES: WebhookEventType[] = ['payment.pending', 'payment.succeeded', 'refund.succeeded', 'session.expired', 'payment.failed'];

type Listed = { id: string; type: string; createdAt: string; paymentSessionId: string | null; body: string };

for (const { engine, skip } of engines) {
  describeOnEngine(`the events API on ${engine}`, skip, () => {
    let service: Service;
    let dropStorage: () => Promise<void>;
    let shop: { merchantId: string; apiKey: string; liveKey: string; session: WebhookSession };

    before(async () => {
      const storage = await createServiceStorage(engine);
      dropStorage = storage.drop;
      const config = loadConfig({
        ...storage.settings,
        TILL_LOG_LEVEL: 'silent',
        PORT: '0',
        TILL_BASE_URL: 'http://till.test',
        TILL_MAIL_FROM: 'Till <till@example.com>',
      });
      // The deployment serves both modes, as one with live settings will: a live key authenticates beside the test one.
      service = await createService(
        { ...config, modes: ['sandbox', 'live'] },
        { workers: false, log: pino({ level: process.env.TILL_TEST_LOG_LEVEL ?? 'silent' }) },
      );
      const { merchantId, apiKey } = await createMerchant(service.context.db);
      const liveKey = (await createApiKey(service.context.db, merchantId, 'live')).apiKey;
      const sessionId = await createSession(service, apiKey, { amount: 19.99, currency: 'EUR', orderId: 'events-1' });
      const session = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      shop = { merchantId, apiKey, liveKey, session };
    });
    after(async () => {
      await service?.close();
      await dropStorage?.();
    });

    const enqueue = (session: WebhookSession, type: WebhookEventType) =>
      service.context.db.transaction().execute((trx) =>
        enqueueWebhookEvent(trx, {
          type,
          session,
          ...(type.startsWith('payment') || type.startsWith('refund') ? { payment: PAYMENT } : {}),
          ...(type.startsWith('refund')
            ? { refund: { id: 'rf_1', amount_minor: 1999n, currency: 'EUR', reason: null, tokenAmount: '21.50', tx_hash: '0xbeef', last_error: null } }
            : {}),
          occurredAt: Date.now(),
          explorerTxUrl: service.context.config.explorerTxUrl,
          network: 'base',
        }),
      );
    /** A merchant of its own with `count` events of its sandbox session, their ids oldest first. */
    const merchantWithEvents = async (count: number) => {
      const merchant = await createMerchant(service.context.db);
      const sessionId = await createSession(service, merchant.apiKey, { amount: 5, currency: 'USD' });
      const session = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      for (let index = 0; index < count; index++) await enqueue(session, TYPES[index % TYPES.length]!);
      const rows = await service.context.db
        .selectFrom('webhook_events')
        .select('id')
        .where('merchant_id', '=', merchant.merchantId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return { ...merchant, session, ids: rows.map((row) => row.id) };
    };
    const list = (apiKey: string | undefined, query = '') =>
      service.app.inject({ method: 'GET', url: `/api/checkout/v2/events${query}`, headers: apiKey ? { 'x-sc-apikey': apiKey } : {} });
    /** Every page of a listing, followed by its cursors. */
    const allPages = async (apiKey: string, query: string) => {
      const pages: Listed[][] = [];
      let cursor: string | null = null;
      do {
        const response = await list(apiKey, `?${query}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(response.statusCode, 200, response.body);
        const page = response.json() as { events: Listed[]; nextCursor: string | null };
        pages.push(page.events);
        cursor = page.nextCursor;
      } while (cursor);
      return pages;
    };

    test('a merchant reads its events newest first, a page at a time, each once; or oldest first', async () => {
      const { apiKey, ids } = await merchantWithEvents(23);
      const newest = await allPages(apiKey, 'limit=10');
      assert.deepEqual(
        newest.map((page) => page.length),
        [10, 10, 3],
      );
      assert.deepEqual(
        newest.flat().map((event) => event.id),
        [...ids].reverse(),
      );
      const oldest = await allPages(apiKey, 'limit=7&order=oldest');
      assert.deepEqual(
        oldest.flat().map((event) => event.id),
        ids,
      );
      // Twenty a page unless asked.
      assert.equal((await list(apiKey)).json().events.length, 20);
      const first = newest[0]![0]!;
      assert.equal(first.type, JSON.parse(first.body).event);
      assert.equal(first.id, JSON.parse(first.body).id);
      assert.match(first.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    test('each event carries, byte for byte, the body its webhook delivered; and it is read alone by its id', async () => {
      const receiver = await startReceiver();
      const merchant = await createMerchant(service.context.db);
      const secrets = await setWebhook(service.context.db, service.context.config.secretKey, merchant.merchantId, { url: receiver.url }, 'sandbox');
      const sessionId = await createSession(service, merchant.apiKey, {
        amount: 12.5,
        currency: 'EUR',
        orderId: 'bytes-1',
        successUrl: 'https://shop.example/ok',
      });
      const session = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      const { eventId } = await enqueue(session, 'payment.succeeded');
      const worker = startWebhookWorker(service.context, {
        settings: { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true },
        pollIntervalMs: 50,
      });
      try {
        const delivered = await waitFor(() => receiver.received[0], 'the delivery');
        new Webhook(secrets.signingSecret).verify(delivered.body, delivered.headers as Record<string, string>);
        const [listed] = (await list(merchant.apiKey)).json().events as Listed[];
        assert.equal(listed!.id, eventId);
        assert.equal(listed!.body, delivered.body);
        assert.equal(listed!.paymentSessionId, sessionId);
        const read = await service.app.inject({ method: 'GET', url: `/api/checkout/v2/events/${eventId}`, headers: { 'x-sc-apikey': merchant.apiKey } });
        assert.equal(read.statusCode, 200);
        assert.deepEqual(read.json(), listed);
      } finally {
        await worker.stop();
        await receiver.close();
      }
    });

    test('filters by type (one or several) and by creation time', async () => {
      const { apiKey } = await merchantWithEvents(10);
      const all = (await list(apiKey, '?order=oldest&limit=100')).json().events as Listed[];
      const expired = (await list(apiKey, '?type=session.expired')).json().events as Listed[];
      assert.deepEqual(
        expired.map((event) => event.id),
        all
          .filter((event) => event.type === 'session.expired')
          .map((event) => event.id)
          .reverse(),
      );
      assert.equal(expired.length, 2);
      const two = (await list(apiKey, '?type=payment.succeeded,refund.succeeded&limit=100')).json().events as Listed[];
      assert.deepEqual(new Set(two.map((event) => event.type)), new Set(['payment.succeeded', 'refund.succeeded']));
      assert.equal(two.length, 4);
      // A time window: from the creation of one event (included) to that of a later one (excluded).
      const from = all[3]!.createdAt;
      const to = all.find((event) => event.createdAt > from && Date.parse(event.createdAt) > Date.parse(from))?.createdAt;
      const windowed = (await list(apiKey, `?order=oldest&limit=100&createdFrom=${from}${to ? `&createdTo=${to}` : ''}`)).json().events as Listed[];
      assert.deepEqual(
        windowed.map((event) => event.id),
        all.filter((event) => event.createdAt >= from && (to === undefined || event.createdAt < to)).map((event) => event.id),
      );
      assert.ok(windowed.some((event) => event.id === all[3]!.id));
      const future = (await list(apiKey, `?createdFrom=${new Date(Date.now() + 60_000).toISOString()}`)).json();
      assert.deepEqual(future, { events: [], nextCursor: null });
    });

    test('a bad query parameter is 400 naming it, and nothing else is read', async () => {
      const { apiKey } = shop;
      const cursor = (await list(apiKey, '?limit=1')).json().nextCursor as string;
      for (const [query, field, code] of [
        ['type=payment.refunded', 'type', 'invalid_field'],
        ['type=payment.succeeded,', 'type', 'invalid_field'],
        ['type=session.expired&type=payment.failed', 'type', 'invalid_field'],
        ['createdFrom=yesterday', 'createdFrom', 'invalid_field'],
        ['createdTo=2026-01-31', 'createdTo', 'invalid_field'],
        ['createdFrom=2026-02-01T00:00:00Z&createdTo=2026-01-01T00:00:00Z', 'createdTo', 'invalid_field'],
        ['limit=0', 'limit', 'invalid_field'],
        ['limit=101', 'limit', 'invalid_field'],
        ['limit=ten', 'limit', 'invalid_field'],
        ['order=random', 'order', 'invalid_field'],
        ['cursor=not-a-cursor', 'cursor', 'invalid_field'],
        [`cursor=${cursor}x`, 'cursor', 'invalid_field'],
        ['since=2026-01-01T00:00:00Z', 'since', 'unknown_field'],
      ] as const) {
        const response = await list(apiKey, `?${query}`);
        assert.equal(response.statusCode, 400, query);
        assert.equal(response.json().error.code, code, query);
        assert.equal(response.json().error.field, field, query);
      }
    });

    test('without a valid key nothing is listed; another merchant never sees the events of this one', async () => {
      for (const key of [undefined, 'sk_test_unknown', `${shop.apiKey}x`]) {
        const response = await list(key);
        assert.equal(response.statusCode, 401);
        assert.equal(response.json().error.code, 'unauthorized');
      }
      const { eventId } = await enqueue(shop.session, 'payment.succeeded');
      const stranger = await createMerchant(service.context.db);
      assert.deepEqual((await list(stranger.apiKey)).json().events, []);
      const read = await service.app.inject({ method: 'GET', url: `/api/checkout/v2/events/${eventId}`, headers: { 'x-sc-apikey': stranger.apiKey } });
      assert.equal(read.statusCode, 404);
      assert.equal(read.json().error.code, 'not_found');
    });

    test("a credential of one mode never sees the other mode's events", async () => {
      const merchant = await createMerchant(service.context.db);
      const liveKey = (await createApiKey(service.context.db, merchant.merchantId, 'live')).apiKey;
      const sessionId = await createSession(service, merchant.apiKey, { amount: 3, currency: 'USD', orderId: 'mode-test' });
      const testSession = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      // The live session's event, written by the outbox as a live payment's would be.
      const liveSession = { ...testSession, id: 'ps_live_mode_test', order_id: 'mode-live', mode: 'live' as const };
      const testEvent = (await enqueue(testSession, 'payment.succeeded')).eventId;
      const liveEvent = (await enqueue(liveSession, 'payment.succeeded')).eventId;
      const ids = async (key: string) => ((await list(key)).json().events as Listed[]).map((event) => event.id);
      assert.deepEqual(await ids(merchant.apiKey), [testEvent]);
      assert.deepEqual(await ids(liveKey), [liveEvent]);
      const read = (key: string, id: string) => service.app.inject({ method: 'GET', url: `/api/checkout/v2/events/${id}`, headers: { 'x-sc-apikey': key } });
      assert.equal((await read(merchant.apiKey, liveEvent)).statusCode, 404);
      assert.equal((await read(liveKey, testEvent)).statusCode, 404);
      assert.equal((await read(liveKey, liveEvent)).json().paymentSessionId, 'ps_live_mode_test');
    });

    test('a test key triggers a test event of any type, in the shape of a real one; a live key is refused and nothing is made', async () => {
      const merchant = await createMerchant(service.context.db);
      const liveKey = (await createApiKey(service.context.db, merchant.merchantId, 'live')).apiKey;
      const trigger = (key: string, body: unknown) =>
        service.app.inject({
          method: 'POST',
          url: '/api/checkout/v2/events/test',
          headers: { 'x-sc-apikey': key, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      const made = await trigger(merchant.apiKey, { type: 'payment.succeeded' });
      assert.equal(made.statusCode, 201, made.body);
      const { event, deliveryId } = made.json() as { event: Listed; deliveryId: string | null };
      assert.equal(deliveryId, null, 'no webhook URL is set, so nothing is queued');
      const body = JSON.parse(event.body);
      assert.equal(body.event, 'payment.succeeded');
      assert.equal(body.status, 'SUCCESS');
      assert.equal(body.id, event.id);
      assert.match(body.paymentSessionId, /^ps_test_/);
      assert.match(body.paymentId, /^TX-[0-9A-F]{32}$/);
      assert.equal(body.receipts.length, 1);
      const refund = JSON.parse((await trigger(merchant.apiKey, { type: 'refund.failed' })).json().event.body);
      assert.equal(refund.status, 'FAILED');
      assert.equal(refund.refund.failureReason, 'authorization_expired');
      const again = JSON.parse((await trigger(merchant.apiKey, { type: 'payment.succeeded' })).json().event.body);
      assert.notEqual(again.paymentSessionId, body.paymentSessionId, 'each trigger is about a session of its own');
      assert.deepEqual(
        ((await list(merchant.apiKey)).json().events as Listed[]).map((listed) => listed.type),
        ['payment.succeeded', 'refund.failed', 'payment.succeeded'],
      );

      const refused = await trigger(liveKey, { type: 'payment.succeeded' });
      assert.equal(refused.statusCode, 403);
      assert.equal(refused.json().error.code, 'test_mode_only');
      assert.deepEqual((await list(liveKey)).json().events, []);
      const bad = await trigger(merchant.apiKey, { type: 'payment.refunded' });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().error.field, 'type');
    });
  });
}

test(`no code deletes webhook events, so the events API finds each for at least its promised 30 days`, () => {
  const root = join(import.meta.dirname, '..');
  const deleting = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.parentPath.includes('migrations'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => /deleteFrom\(\s*'webhook_events'|DELETE\s+FROM\s+"?webhook_events\b|TRUNCATE[^;]*webhook_events/i.test(readFileSync(file, 'utf8')));
  assert.deepEqual(deleting, [], 'a purge of webhook events must keep every event younger than EVENT_RETENTION_DAYS, and its test replace this one');
});
