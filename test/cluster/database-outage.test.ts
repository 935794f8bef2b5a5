// The database unreachable in the middle of traffic, through a TCP proxy between two instances and
// PostgreSQL (the shared server is never touched): requests get 503 with Retry-After meanwhile,
// nothing is half-written, payments transferred on chain while their record could not be written
// are resolved once, and the instances serve again without a restart; their background workers
// (expiry, webhooks, reconciler) carry on. TILL_TEST_OUTAGE_SECONDS sets the outage (10 s unless
// given). PostgreSQL only: skipped with a notice without TILL_TEST_POSTGRES_URL. Figures in
// docs/operations.md ("Database outage"), from:
//   TILL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test npm test -- test/cluster/database-outage.test.ts
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/index.ts';
import { type Cluster, startCluster } from '../../src/testing/cluster.ts';
import { describeOnEngine, engines } from '../../src/testing/harness.ts';
import { apiHeaders, challenge, fundedPayer, pay, SESSIONS_PATH, signedPayment } from '../../src/testing/shop.ts';
import { startTcpProxy, type TcpProxy } from '../../src/testing/tcp-proxy.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { setWebhook } from '../../src/webhooks/endpoints.ts';
import { startReceiver } from '../../src/webhooks/fixtures/receiver.ts';

const OUTAGE_MS = Number(process.env.TILL_TEST_OUTAGE_SECONDS ?? 10) * 1000;
const CLIENTS = 6;
/** Payments whose proofs are sent just as the database goes away. */
const PAYMENTS = 8;
const SESSION_TTL_SECONDS = 6;

/** How many answers of each status each endpoint gave, e.g. { create: { 503: 40 } }. */
function statusesByEndpoint(answers: Answer[]): Record<string, Record<number, number>> {
  const tally: Record<string, Record<number, number>> = {};
  for (const { what, status } of answers) {
    tally[what] ??= {};
    tally[what][status] = (tally[what][status] ?? 0) + 1;
  }
  return tally;
}

const { skip } = engines.find((e) => e.engine === 'postgres')!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Phase = 'before' | 'outage' | 'after';
type Answer = { phase: Phase; what: string; status: number; retryAfter: string | null; code: string | undefined; instance: number };
type Created = { key: string; body: Record<string, unknown>; status: number; sessionId: string | undefined };

describeOnEngine('the database unreachable for a while, on a cluster', skip, () => {
  let proxy: TcpProxy;
  let cluster: Cluster;
  let direct: DatabaseHandle;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let pendingAtRestore = 0;
  before(async () => {
    const server = new URL(process.env.TILL_TEST_POSTGRES_URL!);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const proxied = new URL(server);
    proxied.port = String(proxy.port);
    receiver = await startReceiver();
    cluster = await startCluster({
      roles: ['all', 'api'],
      postgresUrl: proxied.toString(),
      faultControls: true,
      env: {
        TILL_SESSION_TTL_SECONDS: String(SESSION_TTL_SECONDS),
        TILL_EXPIRY_SWEEP_INTERVAL_MS: '500',
        TILL_RECONCILE_INTERVAL_MS: '500',
        TILL_RECONCILE_GRACE_MS: '1000',
        TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '1000',
        // Every E1 refused during a long outage is sent again at once after it: not the per-key limit's test.
        TILL_SESSIONS_PER_MINUTE_PER_KEY: '1000000',
      },
    });
    // The test's own reads go straight to the server, so they work while the instances are cut off.
    const url = new URL(cluster.env.TILL_DATABASE_URL!);
    url.port = server.port || '5432';
    direct = openDatabase(loadConfig({ ...cluster.env, TILL_DATABASE_URL: url.toString() }));
    const config = loadConfig(cluster.env);
    await setWebhook(direct.db, config.secretKey, cluster.merchant.merchantId, { url: receiver.url }, config.mode);
  });
  after(async () => {
    proxy?.restore();
    await direct?.close();
    await cluster?.stop();
    await receiver?.close();
    await proxy?.close();
  });

  test('503 with Retry-After while it is away, nothing half-written, and served again without a restart', async () => {
    const traffic = startTraffic();
    let recovery: number[];
    let payments: ReturnType<typeof paymentsAcrossTheCut> | undefined;
    try {
      const buyers = await readyBuyers();
      recovery = await cutAndRestore(traffic, async () => {
        // The facilitator settles on chain at once but answers late, so the cut falls between a
        // payment's transfer and its record: the case the reconciler must resolve.
        await cluster.sandbox.faults.set({ delaySettleMs: 3_000 });
        payments = paymentsAcrossTheCut(buyers);
        // Awaited after the outage; a failure meanwhile must not count as unhandled.
        payments.catch(() => {});
        await waitFor(
          async () => (await cluster.sandbox.faults.get()).stats.settleRequests >= PAYMENTS,
          'every proof to reach the facilitator’s settle',
          15_000,
        );
      });
      // Traffic goes on until every instance serving the API has created sessions again.
      await waitFor(
        () =>
          cluster.instances
            .filter((instance) => instance.servesApi)
            .every((instance) => traffic.answers.some((a) => a.phase === 'after' && a.what === 'create' && a.status === 201 && a.instance === instance.index)),
        'sessions created again by every instance after the outage',
        30_000,
      );
    } finally {
      await traffic.stop();
    }
    const { answers, created, transportErrors } = traffic;

    // Every answer is one the API promises: never a 5xx other than the 503, never a dropped connection.
    assert.deepEqual(transportErrors, []);
    assert.deepEqual(
      answers.filter((a) => ![200, 201, 402, 503].includes(a.status)),
      [],
      'answers other than 200, 201, 402 and 503',
    );
    for (const answer of answers.filter((a) => a.status === 503)) {
      assert.equal(answer.code, 'database_unreachable');
      assert.ok(Number(answer.retryAfter) > 0, 'a 503 says when to retry');
    }
    const during = answers.filter((a) => a.phase === 'outage');
    const refused = during.filter((a) => a.status === 503);
    assert.ok(refused.length > 0, 'requests were refused during the outage');
    assert.ok(
      answers.filter((a) => a.phase === 'before').every((a) => a.status !== 503),
      'no 503 before the outage',
    );
    assert.ok(
      answers.filter((a) => a.phase === 'after' && a.what === 'create').some((a) => a.status === 201),
      'sessions are created again after the outage',
    );
    for (const instance of cluster.instances) {
      assert.equal(instance.starts, 1, `instance ${instance.index} was never restarted`);
      assert.ok(instance.up);
    }
    assert.deepEqual(cluster.unexpectedExits(), []);
    assert.deepEqual(cluster.grepOutput(/unhandled|uncaught/i), []);

    // Nothing half-written: each session has its idempotency row with its answer, and the reverse.
    const db = direct.db;
    const merchantId = cluster.merchant.merchantId;
    const keys = await db.selectFrom('idempotency_keys').selectAll().where('merchant_id', '=', merchantId).execute();
    assert.deepEqual(
      keys.filter((k) => k.status_code === null || k.response_body === null),
      [],
      'no idempotency key left without its answer',
    );
    const sessionIds = new Set((await db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute()).map((s) => s.id));
    const keyed = new Map(keys.map((k) => [k.idempotency_key, (JSON.parse(k.response_body!) as { sessionId: string }).sessionId]));
    assert.equal(keyed.size, sessionIds.size, 'one idempotency key per session, none of either alone');
    for (const sessionId of keyed.values()) assert.ok(sessionIds.has(sessionId), `session ${sessionId} of a stored answer exists`);
    for (const c of created.filter((c) => c.status === 201)) assert.equal(keyed.get(c.key), c.sessionId, 'an accepted E1 has its session and key');
    // A refused E1 sent again with its key is done once: a new session, or the one whose commit the outage hid.
    const refusedCreates = created.filter((c) => c.status === 503);
    for (const c of refusedCreates) {
      const again = await createSession(c.key, c.body);
      assert.equal(again.status, 201);
      const { sessionId } = (await again.json()) as { sessionId: string };
      if (keyed.has(c.key)) assert.equal(sessionId, keyed.get(c.key));
    }

    // Payments sent as the database went away: each buyer sends the same proof again until it is
    // answered 200; each is charged once on chain, recorded SUCCESS with that transfer's hash.
    const paid = await payments!;
    const transfers = await cluster.sandbox.transfers(cluster.merchant.wallet);
    const successes = await db.selectFrom('payments').select(['session_id', 'tx_hash', 'status']).where('status', '=', 'SUCCESS').execute();
    for (const { sessionId, payer, final } of paid) {
      const fromPayer = transfers.filter((t) => t.from.toLowerCase() === payer.toLowerCase());
      const success = successes.filter((p) => p.session_id === sessionId);
      assert.equal(final, 200, `session ${sessionId}'s proof is answered 200 in the end`);
      assert.equal(fromPayer.length, 1, `session ${sessionId}'s buyer charged once on chain`);
      assert.equal(success.length, 1);
      assert.equal(success[0]!.tx_hash, fromPayer[0]!.transactionHash);
    }
    assert.equal(transfers.length, successes.length, 'every transfer is a SUCCESS payment');
    assert.deepEqual(await db.selectFrom('payments').select('id').where('status', '=', 'PENDING').execute(), [], 'no payment left PENDING');

    // The workers carried on: every session expires once, and every event reaches the receiver.
    // Every session expires but the STATIC ones paid across the cut.
    const expected = (await db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute()).length - PAYMENTS;
    const deadline = Date.now() + (SESSION_TTL_SECONDS + 30) * 1000;
    let events: { id: string; session_id: string | null }[] = [];
    const delivered = () => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
    for (;;) {
      events = await db.selectFrom('webhook_events').select(['id', 'session_id']).where('type', '=', 'session.expired').execute();
      const seen = delivered();
      if (events.length === expected && events.every((e) => seen.has(e.id))) break;
      assert.ok(Date.now() < deadline, `${events.length} of ${expected} sessions expired, ${seen.size} events delivered`);
      await sleep(250);
    }
    assert.equal(new Set(events.map((e) => e.session_id)).size, events.length, 'one session.expired per session');

    const figures = {
      outageMs: OUTAGE_MS,
      requests: answers.length,
      duringOutage: during.length,
      answered503: refused.length,
      duringOutageByEndpoint: statusesByEndpoint(during),
      answered5xxOther: answers.filter((a) => a.status >= 500 && a.status !== 503).length,
      createsAccepted: created.filter((c) => c.status === 201).length,
      createsRefused: refusedCreates.length,
      createsRefusedButCommitted: refusedCreates.filter((c) => keyed.has(c.key)).length,
      readyAgainMs: recovery,
      paymentsAcrossTheCut: paid.length,
      paymentsFirstAnswers: paid.map((p) => p.first).join(','),
      paymentsRetries: paid.reduce((n, p) => n + p.tries - 1, 0),
      paymentsTransferredButPendingAtRestore: pendingAtRestore,
      sessionsExpired: events.length,
      eventsDelivered: delivered().size,
      restarts: cluster.instances.reduce((n, i) => n + i.starts - 1, 0),
    };
    console.log(`database outage figures: ${JSON.stringify(figures)}`);
  });

  const createSession = (key: string, body: Record<string, unknown>) =>
    cluster.request(SESSIONS_PATH, {
      method: 'POST',
      headers: { ...apiHeaders(cluster.merchant.apiKey), 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  /**
   * Clients as a merchant's server and its buyers: each creates a session (with an
   * Idempotency-Key), reads it, asks for its challenge and its payment page, and now and then
   * lists its webhook deliveries, round and round, until stopped.
   */
  function startTraffic() {
    const answers: Answer[] = [];
    const created: Created[] = [];
    const transportErrors: string[] = [];
    let running = true;
    const state = { phase: 'before' as Phase };
    const record = async (what: string, response: Response & { instance: number }) => {
      const text = await response.text();
      let code: string | undefined;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
      } catch {}
      answers.push({ phase: state.phase, what, status: response.status, retryAfter: response.headers.get('retry-after'), code, instance: response.instance });
      return text;
    };
    const client = async (n: number) => {
      let last: { id: string; at: number } | undefined;
      for (let i = 0; running; i++) {
        try {
          const key = `outage-${n}-${i}-${randomUUID()}`;
          const body = { amount: (100 + (i % 50)) / 100, currency: 'USD', orderId: `o-${key}` };
          const response = await createSession(key, body);
          const text = await record('create', response);
          const sessionId = response.status === 201 ? (JSON.parse(text) as { sessionId: string }).sessionId : undefined;
          created.push({ key, body, status: response.status, sessionId });
          // The last session made, while it is still far from its expiry.
          if (sessionId) last = { id: sessionId, at: Date.now() };
          if (last && Date.now() - last.at > (SESSION_TTL_SECONDS * 1000) / 2) last = undefined;
          if (last) {
            await record('read', await cluster.request(`${SESSIONS_PATH}/${last.id}`, { headers: apiHeaders(cluster.merchant.apiKey) }));
            await record('challenge', await cluster.request(`/x402/session/${last.id}`));
            await record('page', await cluster.request(`/checkout/pay?uid=${last.id}`));
          }
          if (i % 5 === 0) {
            await record('deliveries', await cluster.request('/api/checkout/v2/webhooks/deliveries', { headers: apiHeaders(cluster.merchant.apiKey) }));
          }
        } catch (error) {
          transportErrors.push(String(error));
        }
        // On the clock: a client's pause between its rounds.
        await sleep(20);
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
    return {
      answers,
      created,
      transportErrors,
      state,
      async stop() {
        running = false;
        await Promise.all(clients);
      },
    };
  }

  /** Cuts the database off for OUTAGE_MS mid-traffic, then restores it; the time each instance took to be ready again. */
  async function cutAndRestore(traffic: ReturnType<typeof startTraffic>, justBefore: () => Promise<void>): Promise<number[]> {
    // Mid-traffic: every kind of request has been answered before the cut.
    await waitFor(
      () => ['create', 'read', 'challenge', 'page', 'deliveries'].every((what) => traffic.answers.some((a) => a.what === what)),
      'traffic on every endpoint before the cut',
      30_000,
    );
    await justBefore();
    traffic.state.phase = 'outage';
    proxy.cut();
    const cutAt = Date.now();
    await cluster.sandbox.faults.set({ delaySettleMs: 0 });
    try {
      // Readiness says so on every instance while the database is away.
      for (const instance of cluster.instances) {
        const ready = await waitFor(
          async () => {
            assert.deepEqual(cluster.unexpectedExits(), [], 'no instance ends when the database goes away');
            const answer = await fetch(`${instance.url}/readyz`);
            if (answer.status === 503) return answer;
            await answer.arrayBuffer();
            return undefined;
          },
          `instance ${instance.index} /readyz to answer 503 during the outage`,
          OUTAGE_MS,
        );
        assert.ok(Number(ready.headers.get('retry-after')) > 0);
        assert.equal(((await ready.json()) as { error: { code: string } }).error.code, 'database_unreachable');
      }
      assert.deepEqual(cluster.unexpectedExits(), [], 'no instance ends when the database goes away');
      // On the clock: the outage lasts OUTAGE_MS, whatever the instances do meanwhile.
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - cutAt)));
      // Transferred on chain while the database was away, so still PENDING: the reconciler's work.
      const pending = await direct.db.selectFrom('payments').select('payer').where('status', '=', 'PENDING').execute();
      const payers = new Set((await cluster.sandbox.transfers(cluster.merchant.wallet)).map((t) => t.from.toLowerCase()));
      pendingAtRestore = pending.filter((p) => payers.has(p.payer.toLowerCase())).length;
    } finally {
      traffic.state.phase = 'after';
      proxy.restore();
    }
    const restoredAt = Date.now();
    // Served again, by both instances, without a restart.
    const recovery: number[] = [];
    for (const instance of cluster.instances) {
      await waitFor(async () => (await fetch(`${instance.url}/readyz`).catch(() => undefined))?.status === 200, `instance ${instance.index} ready again`);
      recovery.push(Date.now() - restoredAt);
    }
    return recovery;
  }
  /** STATIC sessions (they never expire) and funded buyers, each with the offer of its session's challenge. */
  async function readyBuyers() {
    return Promise.all(
      Array.from({ length: PAYMENTS }, async (_, i) => {
        const response = await createSession(`pay-${i}-${randomUUID()}`, { amount: 0.05, currency: 'USD', orderType: 'STATIC' });
        assert.equal(response.status, 201);
        const { sessionId } = (await response.json()) as { sessionId: string };
        const payer = await fundedPayer(cluster.sandbox);
        return { sessionId, payer, offer: await challenge(cluster.nextUrl(), sessionId) };
      }),
    );
  }

  /** Each buyer's proof, sent now and then again every 500 ms until answered 200. */
  async function paymentsAcrossTheCut(buyers: Awaited<ReturnType<typeof readyBuyers>>) {
    return Promise.all(
      buyers.map(async ({ sessionId, payer, offer }) => {
        const proof = (await signedPayment(payer, cluster.sandbox.usdcAddress, offer)).header;
        let first: number | undefined;
        for (let tries = 1; ; tries++) {
          const status = await pay(cluster.nextUrl(), sessionId, proof).then(
            async (response) => {
              await response.arrayBuffer();
              return response.status;
            },
            () => 0,
          );
          first ??= status;
          assert.ok(status < 500 || status === 503, `a proof answered ${status}`);
          if (status === 200) return { sessionId, payer: payer.address, first, final: status, tries };
          assert.ok(tries < 240, `session ${sessionId}'s proof answered within 2 minutes`);
          // On the clock: the buyer sends the same proof again every 500 ms.
          await sleep(500);
        }
      }),
    );
  }
});
