import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { sql } from 'kysely';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { createWakeSignal } from '../common/wake-signal.ts';
import { openDatabase } from '../db/index.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createSession, sessionRequest } from '../testing/shop.ts';
import { proxiedPostgres } from '../testing/tcp-proxy.ts';
import { waitFor } from '../testing/wait.ts';
import { webhookHeaders } from './deliver.ts';
import { checkWebhookUrl, getWebhook, setWebhook, WebhookSettingsError } from './endpoints.ts';
import type { WebhookEventType } from './event-types.ts';
import { enqueueWebhookEvent } from './events.ts';
import { type Reply, startReceiver } from './fixtures/receiver.ts';
import { NOT_SENT, startWebhookWorker, type WebhookWorker } from './worker.ts';

const PAYMENT = { id: 'pay_1', amount_minor: 1999n, currency: 'EUR', public_order_id: 'TX-abc', tx_hash: '0xfeed' };

for (const { engine, skip } of engines) {
  describeOnEngine(`webhooks on ${engine}`, skip, () => {
    let service: TestService;
    const workers: WebhookWorker[] = [];
    const receivers: { close(): Promise<void> }[] = [];

    before(async () => {
      service = await startTestService(engine);
    });
    afterEach(async () => {
      for (const worker of workers.splice(0)) await worker.stop();
    });
    after(async () => {
      for (const receiver of receivers) await receiver.close();
      await service?.stop();
    });

    const worker = (retrySchedule = [20, 20, 20, 20]) => {
      const started = startWebhookWorker(service.context, {
        settings: { retrySchedule, allowLoopbackTargets: true, allowPrivateTargets: true },
        pollIntervalMs: 50,
      });
      workers.push(started);
      return started;
    };
    const receiver = async (answer?: (index: number) => Reply) => {
      const started = await startReceiver(answer && ((_request, index) => answer(index)));
      receivers.push(started);
      return started;
    };
    /** A merchant with a webhook to `url`, and one TRANSIENT session of it. */
    const merchantWithSession = async (url: string, events?: string[]) => {
      const { merchantId, apiKey } = await service.merchant();
      const secrets = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url, ...(events ? { events } : {}) }, 'sandbox');
      const sessionId = await createSession(service, apiKey, {
        amount: 19.99,
        currency: 'EUR',
        orderId: `o-${Math.random()}`,
        successUrl: 'https://shop.example/ok',
      });
      const session = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
      return { merchantId, apiKey, session, ...secrets };
    };
    /** A pool of the service's database for one worker, counting its completed statements on webhook_deliveries (its claims). */
    const claimCountingPool = () => {
      const counted = { claims: 0 };
      const handle = openDatabase(service.config, { onQuery: (query) => void (/webhook_deliveries/.test(query.sql) && counted.claims++) });
      return Object.assign(counted, { db: handle.db, close: () => handle.close() });
    };
    const enqueue = (session: Awaited<ReturnType<typeof merchantWithSession>>['session'], type: WebhookEventType = 'payment.succeeded') =>
      service.context.db.transaction().execute((trx) =>
        enqueueWebhookEvent(trx, {
          type,
          session,
          ...(type.startsWith('payment') ? { payment: PAYMENT } : {}),
          occurredAt: 1_700_000_000_123,
          explorerTxUrl: service.config.explorerTxUrl,
          network: 'base',
        }),
      );
    const delivery = (eventId: string) =>
      service.context.db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow();
    const attempts = (eventId: string) =>
      service.context.db
        .selectFrom('webhook_attempts')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
        .select(['attempt', 'status_code', 'response_excerpt'])
        .where('event_id', '=', eventId)
        .orderBy('attempt')
        .execute();
    const settled = (eventId: string) =>
      waitFor(async () => {
        const d = await delivery(eventId);
        return d.status !== 'PENDING' && d;
      }, `delivery of ${eventId}`);

    test('settings: secrets sealed at rest, shown again, rotated on request; https outside the sandbox', async () => {
      const { merchantId } = await service.merchant();
      const first = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'https://shop.example/hook' }, 'sandbox');
      assert.match(first.webhookKey, /^whk_/);
      assert.match(first.signingSecret, /^whsec_/);
      const row = await service.context.db.selectFrom('webhook_endpoints').selectAll().where('merchant_id', '=', merchantId).executeTakeFirstOrThrow();
      assert.ok(!row.webhook_key_sealed.includes(first.webhookKey.slice(4)) && !row.signing_secret_sealed.includes(first.signingSecret.slice(6)));
      const shown = await getWebhook(service.context.db, service.config.secretKey, merchantId, 'sandbox');
      assert.equal(shown?.webhookKey, first.webhookKey);
      assert.deepEqual(shown?.events, ['payment.succeeded', 'session.expired']);
      const kept = await setWebhook(
        service.context.db,
        service.config.secretKey,
        merchantId,
        { url: 'https://shop.example/other', events: ['payment.pending', 'payment.succeeded'] },
        'sandbox',
      );
      assert.deepEqual(kept, first);
      const rotated = await setWebhook(
        service.context.db,
        service.config.secretKey,
        merchantId,
        { url: 'https://shop.example/other', rotate: true },
        'sandbox',
      );
      assert.notEqual(rotated.webhookKey, first.webhookKey);
      assert.notEqual(rotated.signingSecret, first.signingSecret);
      assert.deepEqual((await getWebhook(service.context.db, service.config.secretKey, merchantId, 'sandbox'))?.events, [
        'payment.pending',
        'payment.succeeded',
      ]);
      assert.throws(
        () => checkWebhookUrl('http://shop.example/hook', 'live'),
        (e: unknown) => e instanceof WebhookSettingsError && /https/.test(e.message),
      );
      assert.equal(checkWebhookUrl('https://shop.example/hook', 'live'), 'https://shop.example/hook');
      await assert.rejects(
        setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'https://x.example', events: ['payment.refunded'] }, 'sandbox'),
        /unknown event type/,
      );
    });

    test('a receiver failing 3 times then answering 200 gets the event after 4 recorded attempts, signed and with the spec body', async () => {
      const hook = await receiver((index) => (index < 3 ? { status: 500, body: 'x'.repeat(3000) } : { status: 200, body: 'ok' }));
      const { session, webhookKey, signingSecret } = await merchantWithSession(hook.url);
      worker();
      const { eventId } = await enqueue(session);
      const done = await settled(eventId);
      assert.equal(done.status, 'SUCCEEDED');
      assert.deepEqual(
        (await attempts(eventId)).map((a) => [a.attempt, a.status_code]),
        [
          [1, 500],
          [2, 500],
          [3, 500],
          [4, 200],
        ],
      );
      assert.equal((await attempts(eventId))[0]!.response_excerpt!.length, 1024);
      assert.equal(hook.received.length, 4);
      for (const request of hook.received) {
        assert.equal(request.headers['webhook-id'], eventId);
        assert.equal(request.headers['x-webhook-api-key'], webhookKey);
        assert.equal(request.headers['content-type'], 'application/json');
        new Webhook(signingSecret).verify(request.body, request.headers as Record<string, string>);
      }
      const body = JSON.parse(hook.received[3]!.body);
      assert.deepEqual(body, {
        id: eventId,
        event: 'payment.succeeded',
        timestamp: 1_700_000_000_123,
        orderId: session.order_id,
        amount: 19.99,
        currency: 'EUR',
        token: 'USDC',
        successUrl: 'https://shop.example/ok',
        failUrl: null,
        cancelUrl: null,
        paymentSessionId: session.id,
        paymentId: 'TX-abc',
        status: 'SUCCESS',
        chain: 'base',
        receipts: ['http://till.test/sandbox/tx/0xfeed'],
      });
    });

    test('in the sandbox, the default settings deliver to a receiver on this machine', async () => {
      const hook = await receiver();
      const { session } = await merchantWithSession(hook.url.replace('127.0.0.1', 'localhost'));
      assert.equal(service.config.mode, 'sandbox');
      const started = startWebhookWorker(service.context, { pollIntervalMs: 50 });
      workers.push(started);
      const { eventId } = await enqueue(session);
      assert.equal((await settled(eventId)).status, 'SUCCEEDED');
      assert.equal(hook.received.length, 1);
    });

    test('outside the sandbox a loopback receiver is refused, each refusal logged with its reason', async () => {
      const hook = await receiver();
      const { session, merchantId } = await merchantWithSession(hook.url);
      const lines: Record<string, unknown>[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const live = { allowLoopbackTargets: false, allowPrivateTargets: false };
      const started = startWebhookWorker({ ...service.context, log }, { settings: { retrySchedule: [20], ...live }, pollIntervalMs: 50 });
      workers.push(started);
      const { eventId, deliveryId } = await enqueue(session);
      const done = await settled(eventId);
      assert.equal(done.status, 'FAILED');
      assert.equal(hook.received.length, 0);
      assert.match(done.last_error ?? '', /refused by the SSRF guard: 127\.0\.0\.1 is 127\.0\.0\.1, a loopback address/);
      const refusals = lines.filter((line) => line.msg === 'webhook delivery refused');
      assert.equal(refusals.length, 2, 'one log line per refused attempt');
      for (const line of refusals) {
        assert.equal(line.deliveryId, deliveryId);
        assert.equal(line.merchantId, merchantId);
        assert.equal(line.eventId, eventId);
        assert.equal(line.host, `127.0.0.1:${hook.port}`);
        assert.match(String(line.reason), /loopback address/);
      }
    });

    test('standardwebhooks rejects a tampered body, a changed timestamp and an old timestamp', async () => {
      const hook = await receiver();
      const { session, signingSecret } = await merchantWithSession(hook.url);
      worker();
      const { eventId } = await enqueue(session);
      await settled(eventId);
      const { body, headers } = hook.received[0]!;
      const verifier = new Webhook(signingSecret);
      assert.throws(() => verifier.verify(body.replace('19.99', '0.01'), headers as Record<string, string>), /signature/i);
      assert.throws(
        () => verifier.verify(body, { ...(headers as Record<string, string>), 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) }),
        /signature/i,
      );
      const old = webhookHeaders({ eventId, body, webhookKey: 'k', signingSecret }, new Date(Date.now() - 10 * 60_000));
      assert.throws(() => verifier.verify(body, old), /timestamp/i);
      assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(body, headers as Record<string, string>), /signature/i);
    });

    test('a receiver answering 204 is retried until the schedule runs out', async () => {
      const hook = await receiver(() => ({ status: 204 }));
      const { session } = await merchantWithSession(hook.url);
      worker([10, 10]);
      const { eventId } = await enqueue(session);
      const done = await settled(eventId);
      assert.equal(done.status, 'FAILED');
      assert.match(done.last_error ?? '', /retries exhausted/);
      assert.deepEqual(
        (await attempts(eventId)).map((a) => a.status_code),
        [204, 204, 204],
      );
      assert.equal(hook.received.length, 3);
    });

    test('410 disables the endpoint with a reason; setting the URL again resumes held deliveries', async () => {
      let gone = true;
      const hook = await receiver(() => ({ status: gone ? 410 : 200 }));
      const { merchantId, session } = await merchantWithSession(hook.url);
      worker();
      const first = await enqueue(session);
      assert.equal((await settled(first.eventId)).status, 'FAILED');
      const endpoint = await getWebhook(service.context.db, service.config.secretKey, merchantId, 'sandbox');
      assert.ok(endpoint?.disabledAt);
      assert.match(endpoint?.disabledReason ?? '', /410 Gone/);
      const held = await enqueue(session);
      gone = false;
      // Held while disabled: an event of another merchant, enqueued after it, is sent by a claim that passed it over.
      const seen = hook.received.length;
      const other = await merchantWithSession(hook.url);
      const next = await enqueue(other.session);
      assert.equal((await settled(next.eventId)).status, 'SUCCEEDED');
      assert.equal((await delivery(held.eventId)).status, 'PENDING');
      assert.deepEqual(
        hook.received.slice(seen).map((r) => r.headers['webhook-id']),
        [next.eventId],
      );
      await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: hook.url }, 'sandbox');
      assert.equal((await settled(held.eventId)).status, 'SUCCEEDED');
    });

    test('by default only payment.succeeded and session.expired are delivered; the others are opt-in', async () => {
      const hook = await receiver();
      const plain = await merchantWithSession(hook.url);
      const optIn = await merchantWithSession(hook.url, ['payment.pending', 'payment.failed', 'payment.succeeded']);
      assert.equal((await enqueue(plain.session, 'payment.pending')).deliveryId, null);
      assert.equal((await enqueue(plain.session, 'payment.failed')).deliveryId, null);
      assert.notEqual((await enqueue(plain.session, 'session.expired')).deliveryId, null);
      assert.notEqual((await enqueue(optIn.session, 'payment.pending')).deliveryId, null);
      assert.equal((await enqueue(optIn.session, 'session.expired')).deliveryId, null);
    });

    test('the body is frozen when the event is written', async () => {
      const hook = await receiver();
      const { session, apiKey } = await merchantWithSession(hook.url);
      const { eventId } = await enqueue(session, 'session.expired');
      const changed = await sessionRequest(service, apiKey, 'PUT', { sessionId: session.id, amount: 50 });
      assert.equal(changed.statusCode, 200);
      worker();
      await settled(eventId);
      const body = JSON.parse(hook.received.find((r) => r.headers['webhook-id'] === eventId)!.body);
      assert.equal(body.amount, 19.99);
      assert.equal(body.status, 'EXPIRED');
      assert.deepEqual(body.receipts, []);
    });

    test('API: list deliveries with attempts, redeliver with the same id, send a test event; merchant-scoped', async () => {
      const hook = await receiver();
      const { session, apiKey } = await merchantWithSession(hook.url);
      const other = await service.merchant();
      worker();
      const { eventId } = await enqueue(session);
      await settled(eventId);
      const get = (url: string, key = apiKey) => service.app.inject({ method: 'GET', url, headers: { 'x-sc-apikey': key } });
      const post = (url: string, key = apiKey) => service.app.inject({ method: 'POST', url, headers: { 'x-sc-apikey': key } });

      const listed = await get('/api/checkout/v2/webhooks/deliveries');
      assert.equal(listed.statusCode, 200);
      const [entry] = listed.json().deliveries;
      assert.equal(entry.eventId, eventId);
      assert.equal(entry.status, 'SUCCEEDED');
      assert.equal(entry.attempts.length, 1);
      assert.equal(entry.attempts[0].statusCode, 200);

      const again = await post(`/api/checkout/v2/webhooks/events/${eventId}/redeliver`);
      assert.equal(again.statusCode, 202);
      await waitFor(() => hook.received.filter((r) => r.headers['webhook-id'] === eventId).length === 2, 'the redelivery');
      const [first, second] = hook.received.filter((r) => r.headers['webhook-id'] === eventId);
      assert.equal(first!.body, second!.body);

      const sent = await post('/api/checkout/v2/webhooks/test');
      assert.equal(sent.statusCode, 202);
      await waitFor(() => hook.received.find((r) => r.headers['webhook-id'] === sent.json().eventId), 'the test event');
      assert.equal(JSON.parse(hook.received.at(-1)!.body).event, 'webhook.test');

      assert.equal((await get('/api/checkout/v2/webhooks/deliveries', other.apiKey)).json().deliveries.length, 0);
      assert.equal((await post(`/api/checkout/v2/webhooks/events/${eventId}/redeliver`, other.apiKey)).statusCode, 404);
      assert.equal((await post('/api/checkout/v2/webhooks/test', other.apiKey)).json().error.code, 'no_webhook_endpoint');
      assert.equal((await service.app.inject({ method: 'GET', url: '/api/checkout/v2/webhooks/deliveries' })).statusCode, 401);
      assert.equal((await get('/api/checkout/v2/webhooks/deliveries?limit=0')).statusCode, 400);
    });

    /** The operator's view: till_background_row_failures_total for one pass, from GET /metrics. */
    const rowFailures = async (pass: string) => {
      const text = (await service.app.inject({ method: 'GET', url: '/metrics' })).body;
      const line = text.split('\n').find((l) => l.startsWith(`till_background_row_failures_total{pass="${pass}"} `));
      return line ? Number(line.split(' ')[1]) : 0;
    };

    test("a delivery whose endpoint secrets cannot be opened is not sent but recorded, logged and counted; other merchants' deliveries go out", async () => {
      const hook = await receiver();
      const broken = await merchantWithSession(hook.url);
      const other = await merchantWithSession(hook.url);
      // A sealed secret that no longer opens (a damaged value, or one sealed under a key that is no
      // longer configured): no API writes one, so it is put in directly.
      await service.context.db
        .updateTable('webhook_endpoints')
        .set({ webhook_key_sealed: 'k1.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA' })
        .where('merchant_id', '=', broken.merchantId)
        .execute();
      const lines: { level: number; msg: string; deliveryId?: string }[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const failuresBefore = await rowFailures('webhook_delivery');
      const brokenEvent = await enqueue(broken.session);
      const otherEvent = await enqueue(other.session);
      const started = startWebhookWorker(
        { ...service.context, log },
        { settings: { retrySchedule: [20, 20], allowLoopbackTargets: true, allowPrivateTargets: true }, pollIntervalMs: 50 },
      );
      workers.push(started);

      assert.equal((await settled(otherEvent.eventId)).status, 'SUCCEEDED');
      assert.equal(hook.received.filter((r) => r.headers['webhook-id'] === otherEvent.eventId).length, 1);
      const failed = await settled(brokenEvent.eventId);
      assert.equal(failed.status, 'FAILED', 'retried on the schedule, then given up like any failing delivery');
      assert.equal(hook.received.filter((r) => r.headers['webhook-id'] === brokenEvent.eventId).length, 0, 'never sent unsigned');
      const seen = (await service.app.inject({ method: 'GET', url: '/api/checkout/v2/webhooks/deliveries', headers: { 'x-sc-apikey': broken.apiKey } })).json()
        .deliveries[0];
      assert.equal(seen.eventId, brokenEvent.eventId);
      assert.deepEqual(
        seen.attempts.map((a: { statusCode: number | null; error: string }) => [a.statusCode, a.error]),
        Array(3).fill([null, NOT_SENT]),
      );
      assert.equal(await rowFailures('webhook_delivery'), failuresBefore + 3);
      const logged = lines.filter((line) => line.deliveryId === brokenEvent.deliveryId);
      assert.equal(logged.length, 3);
      for (const line of logged) assert.equal(line.level, 50);
    });

    test('an answer holding a NUL character is recorded in the delivery log (PostgreSQL stores no NUL in text)', async () => {
      const hook = await receiver(() => ({ status: 500, body: 'bad\u0000answer' }));
      const { session, apiKey } = await merchantWithSession(hook.url);
      worker([20]);
      const { eventId } = await enqueue(session);
      assert.equal((await settled(eventId)).status, 'FAILED');
      assert.deepEqual(
        (await attempts(eventId)).map((a) => [a.status_code, a.response_excerpt]),
        [
          [500, 'bad\uFFFDanswer'],
          [500, 'bad\uFFFDanswer'],
        ],
      );
      const listed = (await service.app.inject({ method: 'GET', url: '/api/checkout/v2/webhooks/deliveries', headers: { 'x-sc-apikey': apiKey } })).json();
      assert.equal(listed.deliveries[0].attempts[0].response, 'bad\uFFFDanswer');
    });

    test('a new event wakes an idle worker at once, without waiting for a poll', async () => {
      const hook = await receiver();
      const { session } = await merchantWithSession(hook.url);
      const idle = startWebhookWorker(service.context, {
        settings: { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true },
        pollIntervalMs: 600_000,
      });
      workers.push(idle);
      // On PostgreSQL the event is written through another pool and reaches the worker only by NOTIFY.
      const other = engine === 'postgres' ? openDatabase(service.config) : undefined;
      const { eventId } = await (other?.db ?? service.context.db)
        .transaction()
        .execute((trx) =>
          enqueueWebhookEvent(trx, { type: 'payment.succeeded', session, payment: PAYMENT, occurredAt: Date.now(), explorerTxUrl: '{hash}', network: 'base' }),
        );
      if (!other) service.context.webhookWake.notify();
      assert.equal((await settled(eventId)).status, 'SUCCEEDED');
      await other?.close();
    });

    test('an event queued while a starting worker sets up its LISTEN goes out once the LISTEN is in place, not at the next poll', {
      skip: engine === 'sqlite' && 'PostgreSQL only: other processes reach a worker by NOTIFY',
    }, async () => {
      const hook = await receiver();
      const { session } = await merchantWithSession(hook.url);
      // The worker's LISTEN goes through a proxy that holds its connection; its claims through a pool of
      // its own, whose first claim the test sees complete. Polls come every 10 minutes: never, here.
      const { proxy, url } = await proxiedPostgres(service.config.databaseUrl);
      proxy.hold();
      const pool = claimCountingPool();
      const starting = startWebhookWorker(
        { ...service.context, db: pool.db, webhookWake: createWakeSignal(), config: { ...service.config, databaseUrl: url } },
        { settings: { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true }, pollIntervalMs: 600_000 },
      );
      try {
        await waitFor(() => pool.claims > 0, "the starting worker's first claim");
        // Queued by another process after that claim, while nobody listens: its NOTIFY is lost.
        const { eventId } = await enqueue(session);
        proxy.restore();
        assert.equal((await settled(eventId)).status, 'SUCCEEDED');
      } finally {
        await starting.stop();
        await proxy.close();
        await pool.close();
      }
    });

    test('results slow to be recorded: a worker never leases again what it still holds, so each event is sent once', {
      skip: engine === 'sqlite' && 'PostgreSQL only: SQLite serialises claims and records on one connection',
    }, async () => {
      const hook = await receiver();
      const { session } = await merchantWithSession(hook.url);
      const events: string[] = [];
      for (let i = 0; i < 20; i++) events.push((await enqueue(session)).eventId);
      // Another connection holds webhook_attempts locked for several leases: every record waits, claims do not.
      const blocker = openDatabase(service.config);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holding = blocker.db.transaction().execute(async (trx) => {
        await sql`LOCK TABLE webhook_attempts IN EXCLUSIVE MODE`.execute(trx);
        locked();
        await released;
      });
      await isLocked;
      // The worker claims through a pool of its own, so the test counts its claims. A request may take
      // up to 2 s (a loaded machine answers a local POST slowly), and a lease outlives it, as always.
      const pool = claimCountingPool();
      const leaseMs = 2_500;
      const slow = startWebhookWorker(
        { ...service.context, db: pool.db },
        { settings: { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true }, leaseMs, requestTimeoutMs: 2_000, pollIntervalMs: 20 },
      );
      try {
        await waitFor(() => events.every((id) => hook.received.some((r) => r.headers['webhook-id'] === id)), 'every event posted once');
        // Every lease has run out (a lease is wall-clock time) while the records wait, and the worker has
        // claimed five times since: five chances to lease again what it still holds.
        const expiredAt = Date.now() + leaseMs;
        let claimsAtExpiry: number | undefined;
        await waitFor(() => {
          if (Date.now() <= expiredAt) return false;
          claimsAtExpiry ??= pool.claims;
          return pool.claims >= claimsAtExpiry + 5;
        }, 'five claims after every lease ran out');
        release();
        await holding;
        await blocker.close();
        for (const eventId of events) assert.equal((await settled(eventId)).status, 'SUCCEEDED');
      } finally {
        release();
        await slow.stop();
        await pool.close();
      }
      const sent = hook.received.map((r) => String(r.headers['webhook-id'])).filter((id) => events.includes(id));
      assert.equal(sent.length, events.length, 'each event sent once');
      for (const eventId of events) assert.equal((await attempts(eventId)).length, 1, `one recorded attempt for ${eventId}`);
    });

    test('two workers on one database never deliver the same attempt at the same time', async () => {
      const hook = await receiver(() => ({ status: 200, delayMs: 3 }));
      const { session } = await merchantWithSession(hook.url);
      const events: string[] = [];
      for (let i = 0; i < 200; i++) events.push((await enqueue(session)).eventId);
      // SQLite serves one process through one connection, so there the two workers share it.
      const second = engine === 'postgres' ? openDatabase(service.config) : undefined;
      const settings = { retrySchedule: [20], allowLoopbackTargets: true, allowPrivateTargets: true };
      const a = startWebhookWorker(service.context, { settings, pollIntervalMs: 20, concurrency: 16 });
      const b = startWebhookWorker({ ...service.context, db: second?.db ?? service.context.db }, { settings, pollIntervalMs: 20, concurrency: 16 });
      await waitFor(async () => {
        const left = await service.context.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('event_id', 'in', events)
          .where('status', '=', 'PENDING')
          .execute();
        return left.length === 0;
      }, 'all 200 deliveries');
      await a.stop();
      await b.stop();
      await second?.close();
      const ids = hook.received.map((r) => r.headers['webhook-id']).filter((id) => events.includes(String(id)));
      assert.equal(ids.length, 200);
      assert.equal(new Set(ids).size, 200);
      assert.equal(hook.maxConcurrentPerEvent(), 1);
    });
  });
}
