// The reconciler with 10,000 PENDING payments due at once, on SQLite and on PostgreSQL: how many
// passes until every one was looked at, how many passes a due row waits and how many lie between
// two looks at one row, looks per second, time per pass and RPC requests per look. The passes are
// the service's own (followUpPayments, then confirmSettled, started the reconcile interval after
// the previous one ended, as its timer does), reading a spawned sandbox chain through the service's
// chain reader. The payments are written straight into a fresh database: real merchant, sessions
// and quotes, and authorizations signed by real buyer keys that are unused on chain and valid for
// the whole run, so they rightly stay PENDING; a few hundred were settled on chain by the
// facilitator with the answer lost, so their looks find the transfer.
// `npx node bench/reconciler.ts` runs it on its own; `npm run bench -- reconciler` with the others.
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { type Insertable, sql } from 'kysely';
import { pino } from 'pino';
import { type Address, getAddress, type Hex, type LocalAccount } from 'viem';
import { confirmSettled, followUpPayments, type PaymentsPassOptions as ReconcilerOptions } from '../src/chain/payments.ts';
import { createRails } from '../src/chain/rails.ts';
import { BASE, NETWORK_V2 } from '../src/common/network.ts';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/index.ts';
import type { PaymentSessionsTable, PaymentsTable } from '../src/db/schema.ts';
import { createService } from '../src/main.ts';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { sessionResourceUrl } from '../src/sessions/views.ts';
import { sandboxOverHttp, sandboxSettings } from '../src/testing/environment.ts';
import { newAccount, randomNonce, signAuthorization } from '../src/testing/payer.ts';
import { createMerchant } from '../src/testing/shop.ts';
import { MAX_VALIDITY_S } from '../src/x402/protocol.ts';
import type { Quote } from '../src/x402/quotes.ts';
import { facilitatorRequest } from '../src/x402/settlement.ts';
import {
  type BenchOptions,
  type BenchReport,
  createBenchStorage,
  type Engine,
  failureWithOutput,
  fmt,
  mean,
  postgresUnreachable,
  type Skipped,
} from './support.ts';

const ROWS = 10_000;
/** Rows the reconciler looks at per pass (100 per batch, 10 batches), so every due row is looked at within ⌈ROWS / this⌉ passes. */
const LOOKS_PER_PASS = 1_000;
const BOUND = Math.ceil(ROWS / LOOKS_PER_PASS);
/** Looks the reconciler runs at once. */
const CONCURRENCY = 8;
/** Of the rows, those settled on chain whose answer was lost, spread evenly through the queue. */
const LOST = 300;
const LOST_PER_PAYER = 10;
/** The price of every session: 0.05 USD, paid as 0.05 USDC. */
const AMOUNT_MINOR = 5n;
const USDC_AMOUNT = 50_000n;
/** The claims were made over this span, ending the reconciler's grace before the first pass (so every row is due). */
const CLAIM_SPAN_MS = 60_000;
/** The passes stop once every row still PENDING was looked at twice, or at these limits. */
const MAX_PASSES = 4 * BOUND;
const PASSES_BUDGET_MS = 150_000;
const BASE_URL = 'http://till.bench';
const INSERT_CHUNK = 250;

const sessionIdOf = (i: number) => `ps_reconcile${i}`;
const lostSlot = (k: number) => Math.floor((k * ROWS) / LOST) + Math.floor(ROWS / LOST / 2);

/** An authorization as the buyer signed it and Till claimed it. */
type Signed = { payer: Address; nonce: Hex; validAfter: bigint; validBefore: bigint; signature: Hex; claimedAt: number };

async function sign(payer: LocalAccount, payTo: Address, usdc: Address, claimedAt: number): Promise<Signed> {
  const claimedS = BigInt(Math.floor(claimedAt / 1000));
  // As a client signs it: valid from a little before the claim, for less than the longest validity Till accepts.
  const message = {
    from: payer.address,
    to: payTo,
    value: USDC_AMOUNT,
    validAfter: claimedS - 5n,
    validBefore: claimedS + BigInt(MAX_VALIDITY_S) - 10n,
    nonce: randomNonce(),
  };
  return {
    payer: payer.address,
    nonce: message.nonce,
    validAfter: message.validAfter,
    validBefore: message.validBefore,
    signature: await signAuthorization(payer, usdc, message),
    claimedAt,
  };
}

function quoteOf(i: number, payTo: Address, usdc: Address, claimedAt: number): Quote {
  return {
    id: `q_reconcile${i}`,
    session_id: sessionIdOf(i),
    session_version: 1,
    amount_minor: AMOUNT_MINOR,
    currency: 'USD',
    rate: '1',
    rate_source: 'fixed',
    usdc_amount: USDC_AMOUNT,
    pay_to: payTo,
    asset: usdc,
    created_at: claimedAt - 5_000,
    expires_at: claimedAt + 295_000,
  };
}

/**
 * Settles LOST authorizations at the facilitator, with the request Till sends, and drops the
 * answers: what a crash or a lost connection after the settle leaves behind. Shared by both engines
 * (the chain is the same; each database is new).
 */
async function settleWithAnswersLost(sandbox: SpawnedSandbox, payTo: Address, log: (line: string) => void): Promise<Map<number, Signed>> {
  const started = performance.now();
  const usdc = getAddress(sandbox.usdcAddress);
  const faucet = sandboxOverHttp(sandbox);
  const facilitator = new HTTPFacilitatorClient({ url: sandbox.facilitatorUrl });
  const lost = new Map<number, Signed>();
  for (let p = 0; p < LOST / LOST_PER_PAYER; p++) {
    const payer = newAccount();
    await faucet.fund(payer.address, '1');
    for (let k = p * LOST_PER_PAYER; k < (p + 1) * LOST_PER_PAYER; k++) {
      const i = lostSlot(k);
      const signed = await sign(payer, payTo, usdc, Date.now());
      const { payload, requirements } = facilitatorRequest(
        {
          scheme: 'exact',
          network: NETWORK_V2,
          asset: usdc,
          resource: undefined,
          paymentIdentifier: undefined,
          signature: signed.signature,
          from: signed.payer,
          to: payTo,
          value: USDC_AMOUNT,
          validAfter: signed.validAfter,
          validBefore: signed.validBefore,
          nonce: signed.nonce,
        },
        quoteOf(i, payTo, usdc, signed.claimedAt),
        { resourceUrl: sessionResourceUrl(BASE_URL, sessionIdOf(i)), description: 'Bench item', network: BASE },
      );
      const answer = await facilitator.settle(payload, requirements);
      if (!answer.success) throw new Error(`the facilitator did not settle a bench authorization: ${answer.errorReason}`);
      lost.set(i, signed);
    }
  }
  log(`  ${LOST} authorizations settled on chain, answers dropped, in ${fmt((performance.now() - started) / 1000, 1)} s`);
  return lost;
}

/**
 * The sessions, quotes and PENDING payments: row i claimed at its turn of CLAIM_SPAN_MS and due the
 * settle grace later (as a claim schedules its first look), the last just before the first pass.
 */
async function fill(
  db: Db,
  engine: Engine,
  merchantId: string,
  payTo: Address,
  usdc: Address,
  lost: Map<number, Signed>,
  graceMs: number,
  firstPassAt: number,
) {
  let buyer = newAccount();
  const rows: { session: Insertable<PaymentSessionsTable>; quote: Quote; payment: Insertable<PaymentsTable> }[] = [];
  for (let i = 0; i < ROWS; i++) {
    // A buyer key per hundred payments; each payment its own session (an agent buying one item each time).
    if (i % 100 === 99) buyer = newAccount();
    const claimedAt = firstPassAt - graceMs - CLAIM_SPAN_MS + Math.floor(((i + 1) * CLAIM_SPAN_MS) / ROWS) - 1;
    const signed = lost.get(i) ?? (await sign(buyer, payTo, usdc, claimedAt));
    const quote = quoteOf(i, payTo, usdc, signed.claimedAt);
    rows.push({
      session: {
        id: sessionIdOf(i),
        merchant_id: merchantId,
        order_id: `bench-${i}`,
        order_type: 'TRANSIENT',
        status: 'OPEN',
        amount_minor: AMOUNT_MINOR,
        currency: 'USD',
        editable: 0,
        concept: 'Bench item',
        expires_at: signed.claimedAt + 3_600_000,
        created_at: signed.claimedAt - 10_000,
        updated_at: signed.claimedAt,
        version: 1,
        payments_in_progress: 1,
        created_via: 'api',
        mode: 'sandbox',
      },
      quote,
      payment: {
        id: `pay_reconcile${i}`,
        session_id: sessionIdOf(i),
        merchant_id: merchantId,
        quote_id: quote.id,
        status: 'PENDING',
        exclusive: 1,
        payer: signed.payer,
        pay_to: payTo.toLowerCase(),
        asset: usdc.toLowerCase(),
        value: USDC_AMOUNT,
        nonce: signed.nonce,
        valid_after: signed.validAfter,
        valid_before: signed.validBefore,
        signature: signed.signature,
        amount_minor: AMOUNT_MINOR,
        currency: 'USD',
        rate: '1',
        created_at: signed.claimedAt,
        updated_at: signed.claimedAt,
        next_check_at: claimedAt + graceMs,
        mode: 'sandbox',
      },
    });
  }
  await db.transaction().execute(async (trx) => {
    for (let from = 0; from < ROWS; from += INSERT_CHUNK) {
      const chunk = rows.slice(from, from + INSERT_CHUNK);
      await trx
        .insertInto('payment_sessions')
        .values(chunk.map((r) => r.session))
        .execute();
      await trx
        .insertInto('payment_quotes')
        .values(chunk.map((r) => r.quote))
        .execute();
      await trx
        .insertInto('payments')
        .values(chunk.map((r) => r.payment))
        .execute();
    }
  });
  // The planner's statistics, as a table that grew over time has them.
  await sql.raw(engine === 'sqlite' ? 'PRAGMA optimize' : 'ANALYZE').execute(db);
}

/**
 * Counts the requests the chain reader sends to `rpcUrl` while on, by JSON-RPC method, and times
 * them until their answer is read, at the `fetch` its transport calls: no proxy in the path to
 * slow every look.
 */
function countRpcRequests(rpcUrl: string) {
  const original = globalThis.fetch;
  const byMethod = new Map<string, number>();
  let on = false;
  let waitedMs = 0;
  globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    if (!(on && String(input) === rpcUrl && typeof init?.body === 'string')) return original(input, init);
    const body = JSON.parse(init.body) as { method: string } | { method: string }[];
    for (const call of Array.isArray(body) ? body : [body]) byMethod.set(call.method, (byMethod.get(call.method) ?? 0) + 1);
    const started = performance.now();
    const response = await original(input, init);
    // The transport reads the body next; reading a copy here times the whole answer.
    await response.clone().arrayBuffer();
    waitedMs += performance.now() - started;
    return response;
  }) as typeof fetch;
  return {
    byMethod,
    set(counting: boolean) {
      on = counting;
    },
    total: () => [...byMethod.values()].reduce((sum, n) => sum + n, 0),
    /** The summed time from each request to its whole answer. */
    waitedMs: () => waitedMs,
    restore() {
      globalThis.fetch = original;
    },
  };
}

type Figures = {
  engine: Engine;
  intervalMs: number;
  passes: number;
  /** The pass after which every row had been looked at at least once, or undefined. */
  allLookedAtPass: number | undefined;
  lookedAtOnce: number;
  /** Passes running or started since a row fell due, up to the one that looked at it: the most of any look. */
  mostPassesWaited: number;
  /** Passes between two looks at one row: the most. */
  mostPassesBetweenLooks: number;
  looks: number;
  looksPerSecond: number;
  passMs: number[];
  /** Of the passes' time, what confirmSettled took. */
  finalityMs: number;
  looksPerPass: number[];
  rpcRequests: number;
  rpcWaitedMs: number;
  rpcByMethod: [string, number][];
  transfersFound: number;
  failedLooks: number;
  finalStatus: Record<string, number>;
};

async function benchEngine(
  engine: Engine,
  sandbox: SpawnedSandbox,
  payTo: Address,
  lost: Map<number, Signed>,
  log: (line: string) => void,
): Promise<Figures | Skipped> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const storage = await createBenchStorage(engine, 'till-bench-reconciler-');
  let logged = '';
  let failedLooks = 0;
  const logger = pino(
    { level: 'warn' },
    {
      write: (line: string) => {
        if (line.includes('could not reconcile payment yet')) failedLooks++;
        logged = (logged + line).slice(-8_000);
      },
    },
  );
  const config = loadConfig({ ...storage.settings, ...sandboxSettings(sandbox), TILL_LOG_LEVEL: 'warn', PORT: '0', TILL_BASE_URL: BASE_URL });
  const service = await createService(config, { log: logger, workers: false }).catch(async (error: unknown) => {
    await storage.drop();
    throw error;
  });
  const rpc = countRpcRequests(sandbox.rpcUrl);
  try {
    const { context } = service;
    const usdc = getAddress(sandbox.usdcAddress);
    const { merchantId } = await createMerchant(context.db, { name: 'Bench', walletAddress: payTo, keyMode: 'test' });
    const fillStarted = performance.now();
    await fill(context.db, engine, merchantId, payTo, usdc, lost, config.reconcileGraceMs, Date.now());
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    log(`  ${engine.padEnd(8)} ${ROWS} PENDING payments signed and written in ${fmt(fillSeconds, 1)} s`);

    // What the service's timer passes to the reconciler.
    const rails = createRails(config, context.metrics).sandbox!;
    const options: ReconcilerOptions = { ...rails, chain: rails.chain!, intervalMs: config.reconcileIntervalMs, graceMs: config.reconcileGraceMs };

    const index = new Map<string, number>();
    const checks = new Int32Array(ROWS);
    const dueAt = new Float64Array(ROWS);
    const firstPass = new Int32Array(ROWS);
    const lastPass = new Int32Array(ROWS);
    const looksOf = new Int32Array(ROWS);
    const open = new Uint8Array(ROWS);
    const snapshot = () => context.db.selectFrom('payments').select(['id', 'checks', 'next_check_at']).execute();
    for (const row of await snapshot()) {
      const i = Number(row.id.slice('pay_reconcile'.length));
      index.set(row.id, i);
      dueAt[i] = row.next_check_at ?? Number.POSITIVE_INFINITY;
      open[i] = 1;
    }
    if (index.size !== ROWS) throw new Error(`${index.size} payments written, not ${ROWS}`);

    const passEnds: number[] = [];
    const passMs: number[] = [];
    const looksPerPass: number[] = [];
    let mostPassesWaited = 0;
    let mostPassesBetweenLooks = 0;
    let allLookedAtPass: number | undefined;
    let lookedAtOnce = 0;
    let followUpMs = 0;
    let finalityMs = 0;
    const passesStarted = performance.now();
    for (let pass = 1; pass <= MAX_PASSES; pass++) {
      const started = performance.now();
      rpc.set(true);
      const looked = await followUpPayments(context, options);
      rpc.set(false);
      const elapsed = performance.now() - started;
      passEnds.push(Date.now());
      // The looks of this pass, read before confirmSettled, whose finality checks count in `checks` too.
      let looks = 0;
      for (const row of await snapshot()) {
        const i = index.get(row.id)!;
        const delta = row.checks - checks[i]!;
        if (delta > 0) {
          looks += delta;
          looksOf[i]! += delta;
          if (firstPass[i] === 0) {
            firstPass[i] = pass;
            lookedAtOnce++;
          } else mostPassesBetweenLooks = Math.max(mostPassesBetweenLooks, pass - lastPass[i]!);
          // Passes since the row fell due: from the first whose looks were still running then, through this one.
          const firstCandidate = passEnds.findIndex((end) => end > dueAt[i]!) + 1;
          mostPassesWaited = Math.max(mostPassesWaited, pass - firstCandidate + 1);
          lastPass[i] = pass;
        }
        open[i] = row.next_check_at === null ? 0 : 1;
      }
      const confirmStarted = performance.now();
      await confirmSettled(context, options);
      const confirmElapsed = performance.now() - confirmStarted;
      for (const row of await snapshot()) {
        const i = index.get(row.id)!;
        checks[i] = row.checks;
        dueAt[i] = row.next_check_at ?? Number.POSITIVE_INFINITY;
      }
      passMs.push(elapsed + confirmElapsed);
      followUpMs += elapsed;
      finalityMs += confirmElapsed;
      looksPerPass.push(looks);
      if (allLookedAtPass === undefined && lookedAtOnce === ROWS) allLookedAtPass = pass;
      log(
        `  ${engine.padEnd(8)} pass ${String(pass).padStart(2)}: ${String(looked).padStart(4)} looks in ${fmt(elapsed).padStart(5)} ms (${fmt((looked / elapsed) * 1000).padStart(4)}/s), finality ${fmt(confirmElapsed).padStart(3)} ms; ${lookedAtOnce} of ${ROWS} rows looked at`,
      );
      if (looked !== looks) log(`  ${engine.padEnd(8)}   (the rows' check counts moved by ${looks})`);
      const everyOpenRowTwice = looksOf.every((n, i) => n >= 2 || open[i] === 0);
      if ((allLookedAtPass !== undefined && everyOpenRowTwice) || performance.now() - passesStarted > PASSES_BUDGET_MS) break;
      await sleep(options.intervalMs);
    }

    const statuses = await context.db
      .selectFrom('payments')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const settled = await context.db.selectFrom('payments').select('id').where('status', '=', 'SUCCESS').execute();
    const looks = looksPerPass.reduce((sum, n) => sum + n, 0);
    return {
      engine,
      intervalMs: options.intervalMs,
      passes: passMs.length,
      allLookedAtPass,
      lookedAtOnce,
      mostPassesWaited,
      mostPassesBetweenLooks,
      looks,
      looksPerSecond: (looks / followUpMs) * 1000,
      passMs,
      finalityMs,
      looksPerPass,
      rpcRequests: rpc.total(),
      rpcWaitedMs: rpc.waitedMs(),
      rpcByMethod: [...rpc.byMethod].sort((a, b) => b[1] - a[1]),
      transfersFound: settled.filter((row) => lost.has(index.get(row.id)!)).length,
      failedLooks,
      finalStatus: Object.fromEntries(statuses.map((s) => [s.status, Number(s.n)]).sort()),
    };
  } catch (error) {
    throw failureWithOutput(error, { output: () => logged });
  } finally {
    rpc.restore();
    await service.close();
    await storage.drop();
  }
}

const ENGINE_NAMES: Record<Engine, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
const count = (n: number) => n.toLocaleString('en-US');

export async function run(_options?: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const loadAtStart = loadavg()[0]!;
  const sandbox = await spawnSandbox();
  const figures: (Figures | Skipped)[] = [];
  try {
    const payTo = newAccount().address;
    const lost = await settleWithAnswersLost(sandbox, payTo, log);
    for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, sandbox, payTo, lost, log));
  } finally {
    await sandbox.stop();
  }
  const measured = figures.filter((f): f is Figures => !('skipped' in f));
  const intervalMs = measured[0]?.intervalMs ?? 0;
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine (load average ${fmt(loadAtStart, 1)} at the start): ${count(ROWS)} PENDING payments, all due at the first pass, ${LOST} of them settled on chain with the answer lost; the reconciler's passes (\`followUpPayments\`, then \`confirmSettled\`) each started ${intervalMs} ms after the previous one ended, as its timer does, reading a spawned sandbox chain (a block every 2 s) over its RPC, until every row still PENDING had been looked at twice. Designed bound: a due row is looked at within ⌈${count(ROWS)} / ${count(LOOKS_PER_PASS)}⌉ = ${BOUND} passes.`,
    '',
    `| Engine | Passes until each of the ${count(ROWS)} rows was looked at (bound ${BOUND}) | Most passes a due row waited | Most passes between two looks at a row | Passes | Looks | Looks/s in passes | Pass ms, mean (max) | RPC requests per look | Lost answers: transfer found and recorded |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const summary: string[] = [];
  const rpcLines: string[] = [];
  for (const figure of figures) {
    if ('skipped' in figure) {
      lines.push(`| ${figure.engine} | skipped: ${figure.skipped} | | | | | | | | |`);
      summary.push(`reconciler (${figure.engine}): skipped — ${figure.skipped}`);
      continue;
    }
    const name = ENGINE_NAMES[figure.engine];
    const allLooked = figure.allLookedAtPass === undefined ? `not all (${count(figure.lookedAtOnce)})` : String(figure.allLookedAtPass);
    const within = figure.allLookedAtPass !== undefined && figure.allLookedAtPass <= BOUND && figure.mostPassesWaited <= BOUND;
    const perLook = figure.looks ? figure.rpcRequests / figure.looks : 0;
    lines.push(
      `| ${name} | **${allLooked}** | ${figure.mostPassesWaited} | ${figure.mostPassesBetweenLooks} | ${figure.passes} | ${count(figure.looks)} | ${fmt(figure.looksPerSecond)} | ${fmt(mean(figure.passMs))} (${fmt(Math.max(...figure.passMs))}) | ${fmt(perLook, 2)} | ${figure.transfersFound} / ${LOST} |`,
    );
    rpcLines.push(
      `${name}: ${count(figure.rpcRequests)} RPC requests in the looks (${figure.rpcByMethod.map(([method, n]) => `\`${method}\` ${count(n)}`).join(', ')}), ${fmt(figure.rpcWaitedMs / figure.rpcRequests, 1)} ms each from request to answer (up to ${CONCURRENCY} at once); looks per pass ${Math.min(...figure.looksPerPass)}–${Math.max(...figure.looksPerPass)}; \`confirmSettled\` (finality of the settled ones) ${fmt(figure.finalityMs)} ms of the ${count(Math.round(figure.passMs.reduce((sum, ms) => sum + ms, 0)))} ms in passes; looks that could not read the chain: ${figure.failedLooks}; after the run ${Object.entries(
        figure.finalStatus,
      )
        .map(([status, n]) => `${count(n)} ${status}`)
        .join(', ')}.`,
    );
    summary.push(
      `reconciler (${name}): every one of ${count(ROWS)} rows looked at after ${allLooked} passes, a due row waited at most ${figure.mostPassesWaited} passes (bound ${BOUND}: ${within ? 'met' : 'MISSED'}); at most ${figure.mostPassesBetweenLooks} passes between two looks; ${fmt(figure.looksPerSecond)} looks/s, ${fmt(mean(figure.passMs))} ms per pass, ${fmt(perLook, 2)} RPC requests per look; ${figure.transfersFound}/${LOST} lost answers' transfers found`,
    );
  }
  lines.push('', ...rpcLines.flatMap((line) => [line, '']));
  return { name: 'reconciler', summary: summary.join('\n'), markdown: lines.join('\n').trimEnd() };
}

if (import.meta.main) {
  const report = await run(undefined, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`\n${report.summary}\n\n${report.markdown}\n`);
}
