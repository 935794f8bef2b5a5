// Webhook workers killed: status changes (sessions expiring) on a cluster whose two worker
// instances are SIGKILLed at random and restarted while they expire sessions and deliver the
// events. Every event reaches the receiver at least once; a duplicate carries the same event id
// and the same body; none is lost.
//
// PostgreSQL only: skipped with a notice without TILL_TEST_POSTGRES_URL. Sizes, from the environment:
//   TILL_CLUSTER_WEBHOOK_EVENTS   status changes per run (CI default 200)
//   TILL_CLUSTER_WEBHOOK_SPREAD_MS  how long the sessions are made over, so kills land on work (default 15000)
// The full size, whose figures are in docs/operations.md ("Measured on a cluster"):
//   TILL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test TILL_CLUSTER_WEBHOOK_EVENTS=1000 \
//   npm test -- test/cluster/webhooks.test.ts
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { type Cluster, startCluster } from '../../src/testing/cluster.ts';
import { describeOnEngine, engines } from '../../src/testing/harness.ts';
import { apiHeaders, SESSIONS_PATH } from '../../src/testing/shop.ts';
import { setWebhook } from '../../src/webhooks/endpoints.ts';
import { startReceiver } from '../../src/webhooks/fixtures/receiver.ts';

const sized = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const EVENTS = sized('TILL_CLUSTER_WEBHOOK_EVENTS', 200);
const SPREAD_MS = sized('TILL_CLUSTER_WEBHOOK_SPREAD_MS', 15_000);
const SESSION_TTL_SECONDS = 2;
/** Workers killed after 0.3–1.5 s of life, each brought back at once. */
const KILL_AFTER_MS = [300, 1_500] as const;
/** A killed worker's claims come back once their lease (4 × the 15 s request timeout) ends. */
const LEASE_MS = 60_000;
/** Instance 0 serves the API; 1 and 2 are the webhook workers (and expiry sweepers) killed. */
const ROLES = ['api', 'worker', 'worker'] as const;
const WORKERS = [1, 2];

const { skip } = engines.find((e) => e.engine === 'postgres')!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = ([low, high]: readonly [number, number]) => low + Math.floor(Math.random() * (high - low));

describeOnEngine('webhook workers killed on a cluster', skip, () => {
  let cluster: Cluster;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  /** The status the receiver answered each request with, in the order received. */
  const answered: number[] = [];
  before(async () => {
    // The receiver is slow now and then, and refuses one request in 25, so kills land mid-POST and retries happen.
    receiver = await startReceiver((_request, index) => {
      answered[index] = index % 25 === 7 ? 503 : 200;
      return { status: answered[index]!, delayMs: Math.floor(Math.random() * 40) };
    });
    cluster = await startCluster({
      roles: [...ROLES],
      env: {
        TILL_SESSION_TTL_SECONDS: String(SESSION_TTL_SECONDS),
        TILL_EXPIRY_SWEEP_INTERVAL_MS: '250',
        TILL_WEBHOOK_RETRY_SCHEDULE: '1s,1s,2s,2s,3s,5s,5s,10s,10s',
      },
    });
    const config = loadConfig(cluster.env);
    await setWebhook(cluster.db, config.secretKey, cluster.merchant.merchantId, { url: receiver.url }, config.mode);
  });
  after(async () => {
    await cluster?.stop();
    await receiver?.close();
  });

  test(`${EVENTS} status changes with both webhook workers SIGKILLed at random: every event delivered, none lost`, async () => {
    const startedAt = Date.now();
    let making = true;
    let kills = 0;
    const killsOf = new Map(WORKERS.map((index) => [index, 0]));

    // Each worker lives a short random while, is SIGKILLed, and is started again, until the sessions are made.
    const chaos = WORKERS.map(async (index) => {
      while (making || killsOf.get(index)! < 2) {
        // On the clock: the worker lives a random while before its kill.
        await sleep(between(KILL_AFTER_MS));
        await cluster.kill(index);
        kills++;
        killsOf.set(index, killsOf.get(index)! + 1);
        await cluster.restart(index);
      }
    });

    // The status changes: sessions made at an even pace over SPREAD_MS, each expiring SESSION_TTL_SECONDS later.
    const sessionIds: string[] = [];
    try {
      const perTick = Math.max(1, Math.ceil(EVENTS / (SPREAD_MS / 100)));
      while (sessionIds.length < EVENTS) {
        const batch = Math.min(perTick, EVENTS - sessionIds.length);
        const made = await Promise.all(
          Array.from({ length: batch }, async (_, i) => {
            const response = await cluster.request(SESSIONS_PATH, {
              method: 'POST',
              headers: apiHeaders(cluster.merchant.apiKey),
              body: JSON.stringify({ amount: 1, currency: 'USD', orderId: `w-${sessionIds.length + i}` }),
            });
            assert.equal(response.status, 201, await response.clone().text());
            return ((await response.json()) as { sessionId: string }).sessionId;
          }),
        );
        sessionIds.push(...made);
        // On the clock: the sessions are made at an even pace over SPREAD_MS.
        await sleep(100);
      }
    } finally {
      making = false;
      await Promise.all(chaos);
    }
    const chaosEndedAt = Date.now();

    // Every session expires exactly once, and every event reaches the receiver: claims of killed
    // workers come back when their lease ends, so this waits up to a lease and a retry round.
    const events = async () => cluster.db.selectFrom('webhook_events').select(['id', 'session_id', 'body']).where('type', '=', 'session.expired').execute();
    const deadline = Date.now() + LEASE_MS + 60_000;
    const accepted = () => receiver.received.filter((_, i) => answered[i] === 200);
    const deliveredIds = () => new Set(accepted().map((r) => String(r.headers['webhook-id'])));
    let stored = await events();
    let allReceivedAt: number | undefined;
    for (;;) {
      stored = await events();
      const delivered = deliveredIds();
      const succeeded = (await cluster.db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'SUCCEEDED').execute()).length;
      // Delivered, and known to be: a POST answered just before its worker died is sent again once its lease ends.
      if (stored.length === EVENTS && stored.every((e) => delivered.has(e.id)) && succeeded === EVENTS) break;
      if (!allReceivedAt && stored.length === EVENTS && stored.every((e) => delivered.has(e.id))) allReceivedAt = Date.now();
      assert.ok(Date.now() < deadline, `${stored.length} of ${EVENTS} sessions expired, ${delivered.size} events delivered, ${succeeded} recorded`);
      await sleep(250);
    }
    const doneAt = Date.now();

    assert.deepEqual(new Set(stored.map((e) => e.session_id)), new Set(sessionIds), 'one session.expired for each session made');
    assert.equal(stored.length, EVENTS, 'no session expired twice');
    // A duplicate is the same event: same id, same frozen body; nothing the receiver got is unknown.
    const bodyOf = new Map(stored.map((e) => [e.id, e.body]));
    for (const request of receiver.received) {
      const id = String(request.headers['webhook-id']);
      assert.equal(request.body, bodyOf.get(id), `delivery of ${id} carries the event's body`);
      assert.equal((JSON.parse(request.body) as { id: string }).id, id);
    }
    const deliveries = await cluster.db.selectFrom('webhook_deliveries').select(['status']).execute();
    assert.equal(deliveries.length, EVENTS);
    assert.ok(
      deliveries.every((d) => d.status === 'SUCCEEDED'),
      'every delivery recorded as succeeded',
    );
    assert.ok(kills >= WORKERS.length * 2, 'each worker was killed at least twice');
    assert.deepEqual(cluster.unexpectedExits(), [], 'no instance ended unless killed');
    assert.deepEqual(cluster.grepOutput(/unhandled|uncaught/i), []);

    const figures = {
      statusChanges: EVENTS,
      events: stored.length,
      requestsReceived: receiver.received.length,
      refusedByReceiver: receiver.received.length - accepted().length,
      deliveredUnique: deliveredIds().size,
      duplicates: accepted().length - deliveredIds().size,
      lost: EVENTS - deliveredIds().size,
      kills,
      killsPerWorker: Object.fromEntries(killsOf),
      restarts: cluster.instances.reduce((n, i) => n + i.starts - 1, 0),
      chaosSeconds: Math.round((chaosEndedAt - startedAt) / 1000),
      allReceivedSecondsAfterLastKill: Math.round(((allReceivedAt ?? doneAt) - chaosEndedAt) / 1000),
      allRecordedSecondsAfterLastKill: Math.round((doneAt - chaosEndedAt) / 1000),
    };
    console.log(`webhook workers killed figures: ${JSON.stringify(figures)}`);
  });
});
