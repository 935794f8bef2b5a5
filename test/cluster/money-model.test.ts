import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import type { Address, LocalAccount } from 'viem';
import type { Db } from '../../src/db/index.ts';
import type { SandboxFaultsUpdate } from '../../src/sandbox/faults.ts';
import type { SandboxChainControls } from '../../src/sandbox/index.ts';
import { cancelAuthorization, offeredPayment, type PayAnswer, transfersOnChain } from '../../src/testing/buyer.ts';
import { type Cluster, startCluster } from '../../src/testing/cluster.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../src/testing/harness.ts';
import { type Authorization, newAccount, nowSeconds } from '../../src/testing/payer.ts';
import { apiHeaders, SESSIONS_PATH, signedPayment } from '../../src/testing/shop.ts';
import { waitFor } from '../../src/testing/wait.ts';

/**
 * A model-based test of the money path. fast-check draws schedules — buyers (some persistent:
 * whenever an answer offers a payment they sign a new authorization and send it), STATIC and
 * TRANSIENT sessions, a facilitator fault, an RPC with a lagging node, buyers cancelling their
 * authorizations on chain, and (on the PostgreSQL cluster) an API instance SIGKILLed mid-schedule —
 * and plays them against real instances, a real chain and a real facilitator. What must hold is
 * checked against the chain's Transfer logs and the records:
 *  - at most one transfer per purchase a buyer intended (each buyer intends one);
 *  - every transfer has exactly one SUCCESS payment holding its transaction;
 *  - no payment is PENDING past its validBefore + the bound;
 *  - exactly one payment.succeeded per SUCCESS payment;
 *  - a TRANSIENT session is never paid twice.
 * TILL_MODEL_RUNS sets the schedules per engine (CI's small size unless given), TILL_MODEL_SEED the
 * seed; a failure prints both with TILL_MODEL_PATH, which replays the failing schedule.
 */
const RUNS = Number(process.env.TILL_MODEL_RUNS ?? 6);
const SEED = process.env.TILL_MODEL_SEED === undefined ? Date.now() ^ (Math.random() * 0x7fffffff) : Number(process.env.TILL_MODEL_SEED);
const PATH = process.env.TILL_MODEL_PATH;
/** Authorizations are signed valid for this long, the least Till accepts plus a margin, so PENDING ones resolve soon. */
const VALID_S = 14n;
/**
 * The reconciler's bound after validBefore here: confirmations 0, interval 200 ms, at most 5 s
 * between looks once expired, plus the sandbox's 2 s blocks (chain time moves only with blocks)
 * and a restarted instance's start. docs/operations.md gives the formula for a deployment.
 */
const BOUND_MS = 20_000;
const SETTINGS = {
  TILL_X402_PROOFS_PER_MINUTE_PER_IP: '1000000',
  TILL_X402_PROOFS_PER_MINUTE_PER_PAYER: '1000000',
  TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '1000000',
  TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT: '1000000',
  TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '1000000',
  TILL_RECONCILE_INTERVAL_MS: '200',
  TILL_RECONCILE_GRACE_MS: '1500',
  TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '1000',
};

const FAULTS = ['none', 'pending', 'hang', 'error', 'bad_gateway', 'refuse', 'unavailable', 'wrong_hash', 'drop'] as const;
type Fault = (typeof FAULTS)[number];
type BuyerPlan = { persistent: boolean; cancels: boolean; delayMs: number };
type Schedule = {
  orderType: 'STATIC' | 'TRANSIENT';
  cents: number;
  fault: Fault;
  rpcLag: 0 | 3;
  buyers: BuyerPlan[];
  kill: { instance: 0 | 1; afterMs: number } | null;
};

const scheduleArbitrary = (withKills: boolean): fc.Arbitrary<Schedule> =>
  fc.record({
    orderType: fc.constantFrom('STATIC', 'TRANSIENT'),
    cents: fc.integer({ min: 1, max: 9 }),
    fault: fc.constantFrom(...FAULTS),
    rpcLag: fc.constantFrom(0, 0, 3),
    buyers: fc.array(fc.record({ persistent: fc.boolean(), cancels: fc.boolean(), delayMs: fc.integer({ min: 0, max: 250 }) }), { minLength: 1, maxLength: 3 }),
    kill: withKills ? fc.option(fc.record({ instance: fc.constantFrom(0, 1), afterMs: fc.integer({ min: 0, max: 400 }) }), { freq: 3 }) : fc.constant(null),
  }) as fc.Arbitrary<Schedule>;

/** Where a schedule is played: real instances behind a balancer, their database, and the sandbox. */
type Target = {
  request(path: string, init?: RequestInit): Promise<Response>;
  apiKey: string;
  merchantWallet: Address;
  db: Db;
  usdcAddress: Address;
  rpcUrl: string;
  fund(address: string, usdc: string): Promise<unknown>;
  setFaults(update: SandboxFaultsUpdate): Promise<unknown>;
  relayToToken: SandboxChainControls['relayToToken'];
  kill?(index: number): Promise<void>;
  restart?(index: number): Promise<void>;
};

const NO_FAULTS: SandboxFaultsUpdate = { settleFault: 'none', rpcLagBlocks: 0, dropNextSettleResponse: false, delaySettleMs: 0, delayVerifyMs: 0 };

/** A request that an instance killed under it drops is sent again to the next one, as a client retries. */
async function answer(target: Target, path: string, headers: Record<string, string> = {}): Promise<PayAnswer> {
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await target.request(path, { headers });
      return { status: response.status, body: (await response.json()) as PayAnswer['body'] };
    } catch (error) {
      if (attempt >= 10) throw error;
      // On the clock: a client's pause before it sends the request again.
      await sleep(100);
    }
  }
}

type BuyerOutcome = { account: LocalAccount; signed: { auth: Authorization; header: string }[]; answers: PayAnswer[] };

/** A buyer's account, funded: made for every buyer before any of them plays, so only `delayMs` spaces them. */
async function fundedBuyer(target: Target): Promise<LocalAccount> {
  const account = newAccount();
  await target.fund(account.address, '0.5');
  return account;
}

async function playBuyer(target: Target, sessionId: string, account: LocalAccount, plan: BuyerPlan): Promise<BuyerOutcome> {
  // On the clock: the schedule's own spacing of this buyer from the others.
  await sleep(plan.delayMs);
  const path = `/x402/session/${sessionId}`;
  const outcome: BuyerOutcome = { account, signed: [], answers: [await answer(target, path)] };
  for (;;) {
    const offer = offeredPayment(outcome.answers.at(-1)!);
    if (!offer || outcome.signed.length >= (plan.persistent ? 3 : 1)) return outcome;
    const proof = await signedPayment(account, target.usdcAddress, offer, { validBefore: nowSeconds() + VALID_S });
    outcome.signed.push(proof);
    outcome.answers.push(await answer(target, path, { 'x-payment': proof.header }));
  }
}

async function playSchedule(target: Target, schedule: Schedule) {
  const created = await target.request(SESSIONS_PATH, {
    method: 'POST',
    headers: apiHeaders(target.apiKey),
    body: JSON.stringify({ amount: schedule.cents / 100, currency: 'USD', orderType: schedule.orderType }),
  });
  assert.equal(created.status, 201);
  const { sessionId } = (await created.json()) as { sessionId: string };
  const accounts = await Promise.all(schedule.buyers.map(() => fundedBuyer(target)));
  const fault = schedule.fault;
  await target.setFaults({
    ...NO_FAULTS,
    settleFault: fault === 'drop' ? 'none' : fault,
    dropNextSettleResponse: fault === 'drop',
    rpcLagBlocks: schedule.rpcLag,
  });
  // On the clock: the kill lands a random while into the buyers' play, as the schedule draws it.
  const killing = schedule.kill && target.kill ? sleep(schedule.kill.afterMs).then(() => target.kill!(schedule.kill!.instance)) : undefined;
  let buyers: BuyerOutcome[];
  try {
    buyers = await Promise.all(schedule.buyers.map((plan, i) => playBuyer(target, sessionId, accounts[i]!, plan)));
  } finally {
    await killing;
    await target.setFaults(NO_FAULTS);
    if (killing) await target.restart!(schedule.kill!.instance);
  }
  // Buyers who did not get their 200 and chose to, cancel every authorization they signed (a used one stays used).
  for (const [i, plan] of schedule.buyers.entries()) {
    const buyer = buyers[i]!;
    if (!plan.cancels || buyer.answers.at(-1)?.status === 200) continue;
    for (const { auth } of buyer.signed) await cancelAuthorization({ relayToToken: target.relayToToken }, buyer.account, target.usdcAddress, auth.nonce);
  }
  // Checked at once: a buyer is charged at most once, and a TRANSIENT session at most once in all.
  let charged = 0;
  for (const buyer of buyers) {
    const transfers = await transfersOnChain(target.rpcUrl, target.usdcAddress, { from: buyer.account.address, to: target.merchantWallet });
    assert.ok(transfers.length <= 1, `buyer ${buyer.account.address} was charged ${transfers.length} times for one purchase`);
    charged += transfers.length;
  }
  if (schedule.orderType === 'TRANSIENT') assert.ok(charged <= 1, `TRANSIENT session ${sessionId} was paid ${charged} times`);
  return { sessionId, buyers: buyers.map((b) => b.account.address) };
}

/** No payment PENDING past its validBefore + the bound. */
async function overduePending(db: Db, now: number) {
  const pending = await db.selectFrom('payments').select(['id', 'valid_before', 'last_finding']).where('status', '=', 'PENDING').execute();
  return pending.filter((p) => Number(p.valid_before) * 1000 + BOUND_MS < now);
}

async function checkEverything(target: Target, played: { sessionId: string; buyers: string[] }[], schedules: Schedule[]) {
  const db = target.db;
  const sessionIds = played.map((p) => p.sessionId);
  await waitFor(
    async () => {
      const overdue = await overduePending(db, Date.now());
      assert.deepEqual(overdue, [], 'no payment PENDING past validBefore + the bound');
      const open = await db.selectFrom('payments').select('id').where('session_id', 'in', sessionIds).where('status', '=', 'PENDING').execute();
      return open.length === 0;
    },
    'every payment resolved',
    Number(VALID_S) * 1000 + BOUND_MS + 10_000,
  );
  // Settled payments final, so a facilitator's wrong hash has been replaced by the chain's.
  await waitFor(
    async () =>
      (
        await db
          .selectFrom('payments')
          .select('id')
          .where('session_id', 'in', sessionIds)
          .where('status', '=', 'SUCCESS')
          .where('finalized_at', 'is', null)
          .execute()
      ).length === 0,
    'every settled payment final',
  );
  const payments = await db.selectFrom('payments').selectAll().where('session_id', 'in', sessionIds).execute();
  const events = await db
    .selectFrom('webhook_events')
    .select(['session_id', 'payment_id'])
    .where('session_id', 'in', sessionIds)
    .where('type', '=', 'payment.succeeded')
    .execute();
  const successes = payments.filter((p) => p.status === 'SUCCESS');
  for (const [index, { sessionId, buyers }] of played.entries()) {
    const transfers = (
      await Promise.all(buyers.map((from) => transfersOnChain(target.rpcUrl, target.usdcAddress, { from, to: target.merchantWallet })))
    ).flat();
    for (const buyer of buyers)
      assert.ok(transfers.filter((t) => t.from.toLowerCase() === buyer.toLowerCase()).length <= 1, `${buyer} charged once at most (${sessionId})`);
    for (const transfer of transfers) {
      const holders = successes.filter((p) => p.tx_hash === transfer.txHash);
      assert.equal(holders.length, 1, `transfer ${transfer.txHash} of ${sessionId} has exactly one SUCCESS payment`);
      assert.equal(holders[0]!.session_id, sessionId);
    }
    const paid = successes.filter((p) => p.session_id === sessionId);
    assert.equal(paid.length, transfers.length, `every SUCCESS payment of ${sessionId} has its transfer`);
    if (schedules[index]!.orderType === 'TRANSIENT') assert.ok(paid.length <= 1, `TRANSIENT ${sessionId} paid once at most`);
  }
  for (const payment of successes) assert.equal(events.filter((e) => e.payment_id === payment.id).length, 1, `exactly one payment.succeeded for ${payment.id}`);
  return { payments: payments.length, successes: successes.length, failed: payments.filter((p) => p.status === 'FAILED').length };
}

async function runModel(target: Target, withKills: boolean, report: (line: string) => void) {
  const played: { sessionId: string; buyers: string[] }[] = [];
  const schedules: Schedule[] = [];
  let kills = 0;
  try {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(withKills), async (schedule) => {
        const overdue = await overduePending(target.db, Date.now());
        assert.deepEqual(overdue, [], 'no payment PENDING past validBefore + the bound');
        played.push(await playSchedule(target, schedule));
        schedules.push(schedule);
        if (schedule.kill) kills++;
      }),
      { numRuns: RUNS, seed: SEED, ...(PATH ? { path: PATH } : {}), endOnFailure: true },
    );
  } catch (error) {
    const path = /path: "?([0-9:]+)"?/.exec(String(error))?.[1];
    throw new Error(`money model failed; replay with TILL_MODEL_SEED=${SEED}${path ? ` TILL_MODEL_PATH=${path}` : ''}\n${String(error)}`);
  }
  const figures = await checkEverything(target, played, schedules);
  report(JSON.stringify({ seed: SEED, schedules: played.length, kills, ...figures }));
}

const postgres = engines.find((e) => e.engine === 'postgres')!;
describeOnEngine('money model on a PostgreSQL cluster (2 API instances killed at random, 1 doing everything)', postgres.skip, () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await startCluster({ roles: ['api', 'api', 'all'], faultControls: true, env: SETTINGS });
  });
  after(() => cluster?.stop());

  test(`${RUNS} random schedules: charged once, never stuck`, async (t) => {
    const merchant = await cluster.newMerchant('Model shop');
    await runModel(
      {
        request: (path, init) => cluster.request(path, init),
        apiKey: merchant.apiKey,
        merchantWallet: merchant.wallet,
        db: cluster.db,
        usdcAddress: cluster.sandbox.usdcAddress,
        rpcUrl: cluster.sandbox.rpcUrl,
        fund: (address, usdc) => cluster.sandbox.fund(address, usdc),
        setFaults: (update) => cluster.sandbox.faults.set(update),
        relayToToken: (data) => cluster.sandbox.chain.relayToToken(data),
        kill: (index) => cluster.kill(index),
        restart: (index) => cluster.restart(index),
      },
      true,
      (line) => t.diagnostic(line),
    );
    assert.deepEqual(cluster.unexpectedExits(), [], 'no instance died on its own');
    assert.deepEqual(cluster.grepOutput(/unhandled|uncaught/i), []);
  });
});

const sqlite = engines.find((e) => e.engine === 'sqlite')!;
describeOnEngine('money model on SQLite (one instance)', sqlite.skip, () => {
  let shop: PayingShop;
  before(async () => {
    shop = await startPayingShop('sqlite', SETTINGS, { faultControls: true, workers: true, blockIntervalMs: 2000 });
  });
  after(() => shop?.stop());

  test(`${RUNS} random schedules: charged once, never stuck`, async (t) => {
    await runModel(
      {
        request: (path, init) => fetch(shop.baseUrl + path, init),
        apiKey: shop.apiKey,
        merchantWallet: shop.merchantWallet,
        db: shop.service.context.db,
        usdcAddress: shop.sandbox.usdcAddress,
        rpcUrl: shop.sandbox.rpcUrl,
        fund: (address, usdc) => shop.sandbox.fund(address, usdc),
        setFaults: (update) => shop.sandbox.faults.set(update),
        relayToToken: (data) => shop.sandbox.chain.relayToToken(data),
      },
      false,
      (line) => t.diagnostic(line),
    );
  });
});
