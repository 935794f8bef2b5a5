import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { pino } from 'pino';
import { openDatabase } from '../db/index.ts';
import { SANDBOX_RATES, StaticRatesProvider } from '../money/rates.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createSession } from '../testing/shop.ts';
import { waitFor } from '../testing/wait.ts';
import { setWebhook } from '../webhooks/endpoints.ts';
import { expireDueSessions, type Purge, startExpirySweeper } from './expiry.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`session expiry on ${engine}`, skip, () => {
    let service: TestService;
    let apiKey: string;
    let merchantId: string;
    before(async () => {
      service = await startTestService(engine);
      ({ apiKey, merchantId } = await service.merchant());
      await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'https://shop.example/hook' }, 'sandbox');
    });
    after(() => service?.stop());

    const create = (body: Record<string, unknown>) => createSession(service, apiKey, { amount: 5, currency: 'USD', ...body });
    const set = (id: string, values: { expires_at?: number; payments_in_progress?: number; status?: 'OPEN' | 'SUCCESS' }) =>
      service.context.db.updateTable('payment_sessions').set(values).where('id', '=', id).execute();
    const statusOf = async (id: string) =>
      (await service.context.db.selectFrom('payment_sessions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    const expiredEvents = (id: string) =>
      service.context.db.selectFrom('webhook_events').selectAll().where('session_id', '=', id).where('type', '=', 'session.expired').execute();

    test('two sweepers at once expire each due session once, with exactly one session.expired each', async () => {
      const now = Date.now();
      const due: string[] = [];
      for (let i = 0; i < 40; i++) {
        const id = await create({ orderId: `due-${i}` });
        await set(id, { expires_at: now - 1000 });
        due.push(id);
      }
      const paying = await create({});
      await set(paying, { expires_at: now - 1000, payments_in_progress: 1 });
      const paid = await create({});
      await set(paid, { expires_at: now - 1000, status: 'SUCCESS' });
      const later = await create({});
      const donation = await create({ orderType: 'STATIC' });

      // SQLite serves one process through one connection, so there the two sweepers share it and interleave.
      const other = engine === 'postgres' ? openDatabase(service.config) : undefined;
      // Connected before the race: a sweeper still connecting would start after the other had done its work.
      if (other) await sql`select 1`.execute(other.db);
      const [first, second] = await Promise.all([
        expireDueSessions(service.context, now),
        expireDueSessions(other ? { ...service.context, db: other.db } : service.context, now),
      ]);
      await other?.close();

      assert.deepEqual([...first, ...second].sort(), [...due].sort());
      for (const id of due) {
        assert.equal(await statusOf(id), 'EXPIRED');
        const events = await expiredEvents(id);
        assert.equal(events.length, 1, id);
        const body = JSON.parse(events[0]!.body);
        assert.equal(body.status, 'EXPIRED');
        assert.equal(body.event, 'session.expired');
        assert.equal(body.paymentSessionId, id);
        assert.equal(body.timestamp, now);
        const deliveries = await service.context.db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', events[0]!.id).execute();
        assert.equal(deliveries.length, 1);
      }
      assert.equal(await statusOf(paying), 'OPEN', 'a session with a payment in progress waits for it');
      assert.equal(await statusOf(paid), 'SUCCESS', 'a settled session never expires');
      assert.equal(await statusOf(later), 'OPEN');
      assert.equal(await statusOf(donation), 'OPEN', 'STATIC sessions never expire');
      for (const id of [paying, paid, later, donation]) assert.equal((await expiredEvents(id)).length, 0);

      // Once the payment is resolved without success, the next sweep expires the session.
      await set(paying, { payments_in_progress: 0 });
      assert.deepEqual(await expireDueSessions(service.context, now), [paying]);
      assert.deepEqual(await expireDueSessions(service.context, now), []);
      assert.equal((await expiredEvents(paying)).length, 1);
    });

    test('the sweeper runs on its own and stops cleanly', async () => {
      const id = await create({});
      await set(id, { expires_at: Date.now() - 1 });
      const sweeper = startExpirySweeper(service.context, { intervalMs: 20 });
      try {
        await waitFor(async () => (await statusOf(id)) === 'EXPIRED', 'the sweeper to expire the session');
      } finally {
        await sweeper.stop();
      }
      assert.equal(await statusOf(id), 'EXPIRED');
      assert.equal((await expiredEvents(id)).length, 1);
    });
  });

  describeOnEngine(`a row or a purge that fails in the expiry sweep on ${engine}`, skip, () => {
    let service: TestService;
    const lines: { level: number; msg: string; [key: string]: unknown }[] = [];
    before(async () => {
      service = await startTestService(
        engine,
        {},
        {
          rates: new StaticRatesProvider({ rates: { ...SANDBOX_RATES, CLF: '42.5' } }),
          log: pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
        },
      );
    });
    after(() => service?.stop());

    /** A merchant with a webhook URL, as its server sees it: an API key and the deliveries API. */
    const merchantWithWebhook = async () => {
      const merchant = await service.merchant();
      await setWebhook(service.context.db, service.config.secretKey, merchant.merchantId, { url: 'https://shop.example/hook' }, 'sandbox');
      return merchant;
    };
    const setRow = (id: string, values: { expires_at?: number; amount_minor?: bigint }) =>
      service.context.db.updateTable('payment_sessions').set(values).where('id', '=', id).execute();
    const statusOf = async (id: string) =>
      (await service.context.db.selectFrom('payment_sessions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    const deliveriesSeenBy = async (apiKey: string) =>
      (await service.app.inject({ method: 'GET', url: '/api/checkout/v2/webhooks/deliveries', headers: { 'x-sc-apikey': apiKey } })).json().deliveries as {
        event: string;
        paymentSessionId: string;
      }[];
    /** The operator's view: till_background_row_failures_total for one pass, from GET /metrics. */
    const rowFailures = async (pass: string) => {
      const text = (await service.app.inject({ method: 'GET', url: '/metrics' })).body;
      const line = text.split('\n').find((l) => l.startsWith(`till_background_row_failures_total{pass="${pass}"} `));
      return line ? Number(line.split(' ')[1]) : 0;
    };
    const sweepOnce = async (purges: Purge[] = []) => {
      const sweeper = startExpirySweeper(service.context, { intervalMs: 3_600_000, purges });
      await sweeper.sweep();
      await sweeper.stop();
    };

    test("a session whose event cannot be written is skipped, logged and counted; another merchant's due session still expires", async () => {
      const now = Date.now();
      const broken = await merchantWithWebhook();
      // E1 now refuses an amount a JSON number cannot hold (1 CLF is fine); a row written before that
      // rule may still hold one, so it is put in directly: 900719925474.0993 CLF, due first.
      const brokenSession = await createSession(service, broken.apiKey, { amount: 1, currency: 'CLF' });
      await setRow(brokenSession, { amount_minor: 9_007_199_254_740_993n, expires_at: now - 2000 });
      const other = await merchantWithWebhook();
      const otherSession = await createSession(service, other.apiKey, { amount: 5, currency: 'USD' });
      await setRow(otherSession, { expires_at: now - 1000 });
      const failuresBefore = await rowFailures('session_expiry');

      await sweepOnce();

      assert.equal(await statusOf(otherSession), 'EXPIRED');
      assert.deepEqual(
        (await deliveriesSeenBy(other.apiKey)).map((d) => [d.event, d.paymentSessionId]),
        [['session.expired', otherSession]],
        'the other merchant is told',
      );
      assert.equal(await statusOf(brokenSession), 'OPEN', 'left for the operator, with nothing half-written');
      assert.deepEqual(await deliveriesSeenBy(broken.apiKey), []);
      assert.equal(await rowFailures('session_expiry'), failuresBefore + 1);
      const logged = lines.filter((line) => line.sessionId === brokenSession);
      assert.equal(logged.length, 1);
      assert.equal(logged[0]!.level, 50, 'error level');
      assert.match(String(logged[0]!.msg), /could not expire/);
    });

    test('a batch full of failing rows does not hide the due sessions after it', async () => {
      const now = Date.now();
      const broken = await merchantWithWebhook();
      const brokenSessions: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = await createSession(service, broken.apiKey, { amount: 1, currency: 'CLF' });
        await setRow(id, { amount_minor: 9_007_199_254_740_993n, expires_at: now - 10_000 + i });
        brokenSessions.push(id);
      }
      const other = await merchantWithWebhook();
      const otherSession = await createSession(service, other.apiKey, { amount: 5, currency: 'USD' });
      await setRow(otherSession, { expires_at: now - 1000 });
      const failuresBefore = await rowFailures('session_expiry');

      const expired = await expireDueSessions(service.context, now, { batchSize: 2 });

      assert.ok(expired.includes(otherSession));
      assert.equal(await statusOf(otherSession), 'EXPIRED');
      // Earlier tests' broken rows are due too; each failing row is counted once per sweep.
      assert.ok((await rowFailures('session_expiry')) >= failuresBefore + brokenSessions.length);
      for (const id of brokenSessions) assert.equal(await statusOf(id), 'OPEN');
    });

    test('a failing purge does not stop the other purges or the expiry of sessions', async () => {
      const { apiKey } = await merchantWithWebhook();
      const due = await createSession(service, apiKey, { amount: 5, currency: 'USD' });
      await setRow(due, { expires_at: Date.now() - 1000 });
      const ran: string[] = [];
      async function purgeBrokenTable(): Promise<void> {
        ran.push('broken');
        throw new Error('relation "broken_table" does not exist');
      }
      async function purgeOtherTable(): Promise<void> {
        ran.push('other');
      }
      const failuresBefore = await rowFailures('purge:purgeBrokenTable');

      await sweepOnce([purgeBrokenTable, purgeOtherTable]);

      assert.deepEqual(ran, ['broken', 'other']);
      assert.equal(await statusOf(due), 'EXPIRED');
      assert.equal(await rowFailures('purge:purgeBrokenTable'), failuresBefore + 1);
      assert.equal(await rowFailures('purge:purgeOtherTable'), 0);
      const logged = lines.filter((line) => line.purge === 'purgeBrokenTable');
      assert.equal(logged.length, 1);
      assert.equal(logged[0]!.level, 50);
    });
  });
}
