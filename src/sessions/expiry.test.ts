import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase } from '../db/index.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createSession } from '../testing/shop.ts';
import { setWebhook } from '../webhooks/endpoints.ts';
import { expireDueSessions, startExpirySweeper } from './expiry.ts';

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
      const [first, second] = await Promise.all([
        expireDueSessions(service.context, now, service.config.explorerTxUrl),
        expireDueSessions(other ? { db: other.db, webhookWake: service.context.webhookWake } : service.context, now, service.config.explorerTxUrl),
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
      assert.deepEqual(await expireDueSessions(service.context, now, service.config.explorerTxUrl), [paying]);
      assert.deepEqual(await expireDueSessions(service.context, now, service.config.explorerTxUrl), []);
      assert.equal((await expiredEvents(paying)).length, 1);
    });

    test('the sweeper runs on its own and stops cleanly', async () => {
      const id = await create({});
      await set(id, { expires_at: Date.now() - 1 });
      const sweeper = startExpirySweeper(service.context, { intervalMs: 20 });
      try {
        for (let i = 0; i < 1000 && (await statusOf(id)) !== 'EXPIRED'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      } finally {
        await sweeper.stop();
      }
      assert.equal(await statusOf(id), 'EXPIRED');
      assert.equal((await expiredEvents(id)).length, 1);
    });
  });
}
