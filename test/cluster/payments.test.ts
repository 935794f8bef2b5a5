// Payments and expiry on a cluster: 3 `till serve` processes on one PostgreSQL database and one
// `till sandbox`, requests spread round-robin over them as by a load balancer (src/testing/cluster.ts).
//
// PostgreSQL only: skipped with a notice without TILL_TEST_POSTGRES_URL. Sizes, from the environment:
//   TILL_CLUSTER_SESSIONS     TRANSIENT sessions per run (CI default 12)
//   TILL_CLUSTER_PROOFS       proof requests per run, spread over the sessions (CI default 240)
//   TILL_CLUSTER_CONCURRENCY  requests in flight at once (default 24)
//   TILL_CLUSTER_KILL_RUN_MS  how long the run with kills spreads its sessions' first payments over (default 8000)
// The full size, whose figures are in docs/operations.md ("Measured on a cluster"):
//   TILL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test TILL_CLUSTER_SESSIONS=200 \
//   TILL_CLUSTER_PROOFS=10000 npm test -- test/cluster/payments.test.ts
// Each test prints its figures (requests, answers by status, transfers, kills, …) as a diagnostic.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Address, LocalAccount } from 'viem';
import { loadConfig } from '../../src/config.ts';
import { type Cluster, startCluster } from '../../src/testing/cluster.ts';
import { describeOnEngine, engines } from '../../src/testing/harness.ts';
import { nowSeconds } from '../../src/testing/payer.ts';
import { challenge, createSession, fundedPayer, signedPayment, type X402Offer } from '../../src/testing/shop.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { setWebhook } from '../../src/webhooks/endpoints.ts';
import { startReceiver } from '../../src/webhooks/fixtures/receiver.ts';

const sized = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const SESSIONS = sized('TILL_CLUSTER_SESSIONS', 12);
const PROOFS = sized('TILL_CLUSTER_PROOFS', 240);
const CONCURRENCY = sized('TILL_CLUSTER_CONCURRENCY', 24);
/** Payers per session, and distinct proofs each signs: the rest of a session's requests repeat them. */
const PAYERS_PER_SESSION = 3;
const PROOFS_PER_PAYER = 2;
/** Requests of one session sent together, so they race each other across instances. */
const BURST = 8;
const KILL_EVERY_MS = 1_000;
/** The run with kills starts its sessions' payments over at least this long, so kills land on settlements. */
const KILL_RUN_MS = sized('TILL_CLUSTER_KILL_RUN_MS', 8_000);

const { skip } = engines.find((e) => e.engine === 'postgres')!;

/** Proof limits high: 429 is allowed but not what this measures. */
const HIGH_LIMITS = {
  TILL_X402_PROOFS_PER_MINUTE_PER_IP: '1000000',
  TILL_X402_PROOFS_PER_MINUTE_PER_PAYER: '1000000',
  TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '1000000',
  TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT: '1000000',
  TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '1000000',
};

type Shop = Awaited<ReturnType<Cluster['newMerchant']>>;
type Paid = { id: string; offer: X402Offer; payers: LocalAccount[] };

/** What a run saw: answers by status, dropped connections, kills, time. */
type Tally = {
  requests: number;
  /** Different proofs sent; the other requests repeated one of them. */
  distinctProofs: number;
  byStatus: Record<number, number>;
  dropped: number;
  kills: number;
  /** How long each killed instance took to serve again (ms). */
  restartMs: number[];
  ms: number;
  fivexx: string[];
};

async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** S sessions opened through the balancer, each with its offer and its funded payers. */
async function openSessions(cluster: Cluster, shop: Shop, count: number): Promise<Paid[]> {
  const sessions: Paid[] = [];
  await inPool(
    Array.from({ length: count }, (_, i) => i),
    8,
    async () => {
      const id = await createSession(cluster.nextUrl(), shop.apiKey, { amount: 0.05, currency: 'USD', orderType: 'TRANSIENT' });
      const offer = await challenge(cluster.nextUrl(), id);
      const payers: LocalAccount[] = [];
      for (let p = 0; p < PAYERS_PER_SESSION; p++) payers.push(await fundedPayer(cluster.sandbox));
      sessions.push({ id, offer, payers });
    },
  );
  return sessions;
}

/**
 * Sends PROOFS proof requests over the sessions in bursts of one session's proofs (several payers,
 * each proof sent several times), CONCURRENCY in flight. Proofs are signed when a session's first
 * burst starts, valid `validForS`. A dropped connection is retried, as a buyer would.
 */
async function race(cluster: Cluster, sessions: Paid[], options: { validForS: number; killApi?: boolean; spreadMs?: number }): Promise<Tally> {
  const tally: Tally = { requests: 0, distinctProofs: 0, byStatus: {}, dropped: 0, kills: 0, restartMs: [], ms: 0, fivexx: [] };
  const sentProofs = new Set<string>();
  const proofs = new Map<string, Promise<string[]>>();
  const proofsOf = (session: Paid) => {
    let signed = proofs.get(session.id);
    if (!signed) {
      const validBefore = nowSeconds() + BigInt(options.validForS);
      signed = Promise.all(
        session.payers.flatMap((payer) =>
          Array.from({ length: PROOFS_PER_PAYER }, () =>
            signedPayment(payer, cluster.sandbox.usdcAddress, session.offer, { validBefore }).then((proof) => proof.header),
          ),
        ),
      );
      proofs.set(session.id, signed);
    }
    return signed;
  };
  const perSession = Math.max(1, Math.floor(PROOFS / sessions.length));
  // Round by round; with `spreadMs`, the sessions' first bursts start spread over that time, so
  // settlements go on all through the run.
  const requests: { session: Paid; pick: number; notBefore: number }[] = [];
  for (let sent = 0; sent < perSession; sent += BURST)
    sessions.forEach((session, index) => {
      const notBefore = sent === 0 ? ((options.spreadMs ?? 0) * index) / sessions.length : 0;
      for (let i = sent; i < Math.min(sent + BURST, perSession); i++)
        requests.push({ session, notBefore, pick: Math.floor(Math.random() * PAYERS_PER_SESSION * PROOFS_PER_PAYER) });
    });

  const restarts: Promise<void>[] = [];
  // On the clock: an API instance is killed every KILL_EVERY_MS while the run goes on.
  const killer = options.killApi
    ? setInterval(() => {
        const candidates = cluster.instances.filter((i) => i.role === 'api' && i.up);
        const victim = candidates[Math.floor(Math.random() * candidates.length)];
        if (!victim) return;
        tally.kills++;
        restarts.push(
          cluster
            .kill(victim.index)
            .then(() => cluster.restart(victim.index))
            .then(() => void tally.restartMs.push(victim.readyMs!)),
        );
      }, KILL_EVERY_MS)
    : undefined;

  const started = Date.now();
  try {
    await inPool(requests, CONCURRENCY, async ({ session, pick, notBefore }) => {
      const wait = started + notBefore - Date.now();
      // On the clock: the session's first burst starts at its place in the spread.
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const header = (await proofsOf(session))[pick]!;
      for (let attempt = 0; ; attempt++) {
        try {
          const response = await cluster.request(`/x402/session/${session.id}`, { headers: { 'x-payment': header } });
          const body = await response.text();
          tally.requests++;
          sentProofs.add(header);
          tally.byStatus[response.status] = (tally.byStatus[response.status] ?? 0) + 1;
          if (response.status >= 500) tally.fivexx.push(`${response.status} from instance ${response.instance}: ${body.slice(0, 300)}`);
          return;
        } catch (error) {
          // The instance died under the request; a buyer tries again.
          tally.dropped++;
          if (attempt >= 20) throw error;
          // On the clock: a buyer's pause before sending the proof again.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    });
  } finally {
    clearInterval(killer);
    await Promise.all(restarts);
  }
  tally.ms = Date.now() - started;
  tally.distinctProofs = sentProofs.size;
  return tally;
}

/** Every Transfer to the shop's wallet, by the session whose payer sent it. */
async function transfersBySession(cluster: Cluster, shop: Shop, sessions: Paid[]) {
  const sessionOfPayer = new Map<string, string>();
  for (const session of sessions) for (const payer of session.payers) sessionOfPayer.set(payer.address.toLowerCase(), session.id);
  const bySession = new Map<string, string[]>();
  const strangers: string[] = [];
  for (const transfer of await cluster.sandbox.transfers(shop.wallet as Address)) {
    const sessionId = sessionOfPayer.get(transfer.from.toLowerCase());
    if (!sessionId) strangers.push(transfer.transactionHash);
    else bySession.set(sessionId, [...(bySession.get(sessionId) ?? []), transfer.transactionHash]);
  }
  return { bySession, strangers };
}

/** The payments of these sessions, as the database has them. */
const paymentsOf = (cluster: Cluster, sessions: Paid[]) =>
  cluster.db
    .selectFrom('payments')
    .select(['session_id', 'status', 'tx_hash', 'failure_reason', 'settle_response'])
    .where(
      'session_id',
      'in',
      sessions.map((s) => s.id),
    )
    .execute();

/** Exactly one transfer per paid session, on chain and in the database, and nothing left half-done. */
async function assertOneTransferEach(cluster: Cluster, shop: Shop, sessions: Paid[]) {
  const { bySession, strangers } = await transfersBySession(cluster, shop, sessions);
  assert.deepEqual(strangers, [], 'no transfer to the shop from anyone but its sessions’ payers');
  const doubles = [...bySession].filter(([, hashes]) => hashes.length > 1);
  assert.deepEqual(doubles, [], 'no session paid twice on chain');
  const payments = await paymentsOf(cluster, sessions);
  const rows = await cluster.db
    .selectFrom('payment_sessions')
    .select(['id', 'status', 'payments_in_progress'])
    .where(
      'id',
      'in',
      sessions.map((s) => s.id),
    )
    .execute();
  for (const session of rows) {
    const succeeded = payments.filter((p) => p.session_id === session.id && p.status === 'SUCCESS');
    const onChain = bySession.get(session.id) ?? [];
    assert.equal(succeeded.length, onChain.length, `session ${session.id}: ${succeeded.length} SUCCESS payments, ${onChain.length} transfers`);
    assert.equal(session.status, onChain.length === 1 ? 'SUCCESS' : 'OPEN', `session ${session.id}`);
    if (onChain.length === 1) assert.equal(succeeded[0]!.tx_hash, onChain[0], `session ${session.id}: the recorded transfer is the one on chain`);
    assert.equal(session.payments_in_progress, 0, `session ${session.id}: no payment left in progress`);
  }
  assert.deepEqual(
    payments.filter((p) => p.status === 'PENDING'),
    [],
    'no payment left PENDING',
  );
  // The merchant hears of each settlement once, whichever instance or reconciler recorded it.
  const succeededEvents = await cluster.db
    .selectFrom('webhook_events')
    .select('session_id')
    .where('type', '=', 'payment.succeeded')
    .where('merchant_id', '=', shop.merchantId)
    .execute();
  assert.deepEqual(succeededEvents.map((e) => e.session_id).sort(), [...bySession.keys()].sort(), 'one payment.succeeded per session paid');
  return { transfers: [...bySession.values()].reduce((n, hashes) => n + hashes.length, 0), doubles: doubles.length };
}

function assertAnswers(tally: Tally) {
  assert.deepEqual(tally.fivexx, [], 'no 5xx');
  const unexpected = Object.keys(tally.byStatus).filter((status) => !['200', '402', '429'].includes(status));
  assert.deepEqual(unexpected, [], `every answer 200, 402 or 429: ${JSON.stringify(tally.byStatus)}`);
}

function assertNoCrash(cluster: Cluster) {
  assert.deepEqual(cluster.unexpectedExits(), [], 'no instance died on its own');
  assert.deepEqual(cluster.grepOutput(/unhandled|uncaught/i), [], 'no unhandled rejection or uncaught exception');
  // pino's error and fatal levels, across instances and restarts: what an operator is paged for.
  assert.deepEqual(cluster.grepOutput(/"level":(50|60)/), [], 'nothing logged at error level');
}

describeOnEngine('payments racing across 3 instances on PostgreSQL', skip, () => {
  let cluster: Cluster;
  before(async () => {
    // Two API instances (killed in turn) and one doing everything: it keeps serving, and its reconciler resolves what a killed one left.
    cluster = await startCluster({
      roles: ['api', 'api', 'all'],
      env: { ...HIGH_LIMITS, TILL_RECONCILE_INTERVAL_MS: '500', TILL_RECONCILE_GRACE_MS: '2000', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '2000' },
    });
  });
  after(() => cluster?.stop());

  test(`${SESSIONS} TRANSIENT sessions, ${PROOFS} proof requests: one transfer per session, never 5xx`, async (t) => {
    const shop = await cluster.newMerchant('Racing shop');
    const sessions = await openSessions(cluster, shop, SESSIONS);
    const tally = await race(cluster, sessions, { validForS: 120 });
    assertAnswers(tally);
    const { transfers, doubles } = await assertOneTransferEach(cluster, shop, sessions);
    assert.equal(transfers, SESSIONS, 'every session paid');
    assertNoCrash(cluster);
    t.diagnostic(JSON.stringify({ sessions: SESSIONS, ...tally, transfers, doubles }));
  });

  test(`the same with a random API instance SIGKILLed every second: PENDING resolved by the survivor's reconciler`, async (t) => {
    const shop = await cluster.newMerchant('Shop under fire');
    const sessions = await openSessions(cluster, shop, SESSIONS);
    // Short authorizations, so a claim killed before it settled expires soon and its session opens again.
    const validForS = 12;
    const tally = await race(cluster, sessions, { validForS, killApi: true, spreadMs: KILL_RUN_MS });
    assertAnswers(tally);
    assert.ok(tally.kills >= 1, 'at least one instance was killed during the run');

    const leftPending = (await paymentsOf(cluster, sessions)).filter((p) => p.status === 'PENDING').length;
    await waitFor(
      async () => (await paymentsOf(cluster, sessions)).every((p) => p.status !== 'PENDING'),
      'the reconciler to resolve every PENDING payment',
      (validForS + 30) * 1000,
    );
    const mid = await assertOneTransferEach(cluster, shop, sessions);

    // A session whose only claim died with its instance is open again: a fresh proof pays it, once.
    const unpaid = (
      await cluster.db.selectFrom('payment_sessions').select('id').where('status', '=', 'OPEN').where('merchant_id', '=', shop.merchantId).execute()
    ).map((row) => row.id);
    for (const id of unpaid) {
      const session = sessions.find((s) => s.id === id)!;
      const proof = await signedPayment(session.payers[0]!, cluster.sandbox.usdcAddress, session.offer);
      const response = await cluster.request(`/x402/session/${id}`, { headers: { 'x-payment': proof.header } });
      assert.equal(response.status, 200, `session ${id} paid after the run: ${await response.text()}`);
    }
    const { transfers, doubles } = await assertOneTransferEach(cluster, shop, sessions);
    assert.equal(transfers, SESSIONS, 'every session paid');

    const payments = await paymentsOf(cluster, sessions);
    const reconciled = payments.filter((p) => p.settle_response === '{"reconciled":true}' || p.failure_reason === 'authorization_expired').length;
    assertNoCrash(cluster);
    t.diagnostic(
      JSON.stringify({
        sessions: SESSIONS,
        ...tally,
        transfersDuringRun: mid.transfers,
        leftPending,
        reconciled,
        paidAfterRun: unpaid.length,
        transfers,
        doubles,
      }),
    );
  });
});

describeOnEngine('expiry sweepers on 3 instances on PostgreSQL', skip, () => {
  let cluster: Cluster;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    receiver = await startReceiver();
    cluster = await startCluster({
      roles: ['all', 'all', 'worker'],
      env: { ...HIGH_LIMITS, TILL_SESSION_TTL_SECONDS: '3', TILL_EXPIRY_SWEEP_INTERVAL_MS: '50' },
    });
  });
  after(async () => {
    await cluster?.stop();
    await receiver?.close();
  });

  test(`${SESSIONS} sessions past their deadline at once: exactly one session.expired each, delivered`, async (t) => {
    const shop = await cluster.newMerchant('Expiring shop');
    await setWebhook(cluster.db, loadConfig(cluster.env).secretKey, shop.merchantId, { url: receiver.url, events: ['session.expired'] }, 'sandbox');
    const started = Date.now();
    const ids: string[] = [];
    await inPool(
      Array.from({ length: SESSIONS }, (_, i) => i),
      8,
      async () => {
        ids.push(await createSession(cluster.nextUrl(), shop.apiKey, { amount: 1, currency: 'USD' }));
      },
    );
    const statuses = () => cluster.db.selectFrom('payment_sessions').select(['id', 'status']).where('merchant_id', '=', shop.merchantId).execute();
    await waitFor(async () => (await statuses()).every((s) => s.status === 'EXPIRED'), 'every session to expire', 60_000);
    const events = await cluster.db
      .selectFrom('webhook_events')
      .select(['id', 'session_id'])
      .where('type', '=', 'session.expired')
      .where('session_id', 'in', ids)
      .execute();
    const perSession = new Map<string, number>();
    for (const event of events) perSession.set(event.session_id!, (perSession.get(event.session_id!) ?? 0) + 1);
    assert.deepEqual(
      ids.filter((id) => perSession.get(id) !== 1),
      [],
      'exactly one session.expired per session',
    );
    // Delivered at least once each; a repeated delivery carries the same event id.
    const eventIds = new Set(events.map((e) => e.id));
    await waitFor(() => eventIds.size === new Set(receiver.received.map((r) => String(r.headers['webhook-id']))).size, 'every event delivered', 60_000);
    const delivered = receiver.received.map((r) => String(r.headers['webhook-id']));
    assert.deepEqual(
      delivered.filter((id) => !eventIds.has(id)),
      [],
      'only these events were delivered',
    );
    assertNoCrash(cluster);
    t.diagnostic(
      JSON.stringify({
        sessions: SESSIONS,
        sweepers: 3,
        events: events.length,
        deliveries: delivered.length,
        duplicateDeliveries: delivered.length - eventIds.size,
        ms: Date.now() - started,
      }),
    );
  });
});
