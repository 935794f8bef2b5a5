import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { waitFor } from '../testing/wait.ts';
import { setWebhook } from './endpoints.ts';
import { enqueueWebhookEvent, type WebhookSession } from './events.ts';
import { startReceiver } from './fixtures/receiver.ts';

const CHILD = fileURLToPath(new URL('./fixtures/crash-worker.ts', import.meta.url));
const POINTS = ['after-claim', 'after-post', 'before-record'] as const;
const EVENTS = 1000;

for (const { engine, skip } of engines) {
  describeOnEngine(`webhook delivery survives SIGKILL on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test(`${EVENTS} events, a worker killed at seeded fault points and restarted: every event delivered, duplicates share the event id`, async (t) => {
      // Every seventh answer is a 500, so retries mix with crashes.
      const hook = await startReceiver((_request, index) => ({ status: index % 7 === 6 ? 500 : 200 }));
      // Closed at the end below; also when an assertion fails midway, so the file still exits.
      let hookOpen = true;
      let worker: ChildProcess | undefined;
      t.after(() => {
        worker?.kill('SIGKILL');
        return hookOpen ? hook.close() : undefined;
      });
      const { merchantId } = await service.merchant();
      await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: hook.url }, 'sandbox');
      const session: WebhookSession = {
        id: 'ps_crash',
        merchant_id: merchantId,
        order_id: 'crash',
        amount_minor: 100n,
        currency: 'USD',
        success_url: null,
        fail_url: null,
        cancel_url: null,
        mode: 'sandbox',
      };
      const eventIds: string[] = [];
      for (let batch = 0; batch < EVENTS / 100; batch++) {
        await service.context.db.transaction().execute(async (trx) => {
          for (let i = 0; i < 100; i++)
            eventIds.push(
              (
                await enqueueWebhookEvent(trx, {
                  type: 'payment.succeeded',
                  session,
                  occurredAt: Date.now(),
                  explorerTxUrl: service.config.explorerTxUrl,
                  network: 'base',
                })
              ).eventId,
            );
        });
      }
      const pendingCount = async () =>
        Number(
          (
            await service.context.db
              .selectFrom('webhook_deliveries')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('status', '=', 'PENDING')
              .executeTakeFirstOrThrow()
          ).n,
        );

      const kills: Record<string, number> = {};
      const env = {
        ...process.env,
        TILL_DATABASE_URL: service.config.databaseUrl,
        TILL_SECRET_KEY: service.config.secretKey.toString('hex'),
        TILL_DATA_DIR: service.config.dataDir,
        TILL_LOG_LEVEL: 'silent',
      };
      for (let run = 0; (await pendingCount()) > 0; run++) {
        assert.ok(run < 80, 'the deliveries finish within 80 worker runs');
        // The first runs are killed, cycling through the fault points; the last ones run to the end.
        const killPoint = run < 24 ? POINTS[run % POINTS.length]! : '';
        const child = spawn(process.execPath, [CHILD], {
          env: { ...env, TILL_TEST_KILL_POINT: killPoint, TILL_TEST_KILL_SEED: String(run + 1) },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        worker = child;
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
        const signal = await Promise.race([exited, waitFor(async () => (await pendingCount()) === 0, 'deliveries', 120_000).then(() => undefined)]);
        if (signal === undefined) {
          child.kill('SIGTERM');
          await exited;
          break;
        }
        const point = /killed:([\w-]+)/.exec(stderr)?.[1];
        assert.ok(point, `worker run ${run} exited by ${signal} without a fault point: ${stderr}`);
        kills[point] = (kills[point] ?? 0) + 1;
      }
      await hook.close();
      hookOpen = false;

      for (const point of POINTS) assert.ok((kills[point] ?? 0) >= 1, `killed at ${point} at least once: ${JSON.stringify(kills)}`);
      const bodiesById = new Map<string, Set<string>>();
      for (const request of hook.received) {
        const id = String(request.headers['webhook-id']);
        assert.equal(JSON.parse(request.body).id, id);
        if (!bodiesById.has(id)) bodiesById.set(id, new Set());
        bodiesById.get(id)!.add(request.body);
      }
      assert.deepEqual([...bodiesById.keys()].sort(), [...eventIds].sort(), 'every event reached the receiver');
      for (const [id, bodies] of bodiesById) assert.equal(bodies.size, 1, `every copy of ${id} is the same body`);
      const delivered = await service.context.db.selectFrom('webhook_deliveries').select(['status', 'attempts']).execute();
      const notDelivered = delivered.filter((d) => d.status !== 'SUCCEEDED');
      assert.deepEqual(notDelivered, [], 'every delivery ends SUCCEEDED');
      const successes = await service.context.db.selectFrom('webhook_attempts').select('delivery_id').where('status_code', '=', 200).execute();
      assert.equal(new Set(successes.map((s) => s.delivery_id)).size, EVENTS);
      t.diagnostic(`kills ${JSON.stringify(kills)}; ${hook.received.length} requests for ${EVENTS} events`);
    });
  });
}
