// How the cost of the hot paths grows with the database: p99 of E1, the session read, the x402
// challenge, the E4 receipt, the MCP tool list_orders and the dashboard's orders page, with 10,000
// sessions (and orders) in one database and 1,000,000 in another, served side by side and measured
// alternately in the same run, on SQLite and PostgreSQL (target: p99 at 1M at most 1.2× p99 at 10k).
// The databases are filled with a few INSERT … SELECT statements over a generated series, straight
// into the tables; the reads take ids drawn at random from the whole loaded set.
import type { Address } from 'viem';
import { createUser } from '../src/accounts/users.ts';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort, sandboxSettings } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { apiHeaders, SESSIONS_PATH } from '../src/testing/shop.ts';
import {
  averageLoad,
  type BenchOptions,
  type BenchReport,
  type ChildServer,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  type Engine,
  failureWithOutput,
  fillSessionsAndOrders,
  fmt,
  type LoadResult,
  loadRow,
  type MixedKind,
  openBenchDatabase,
  ordersCursor,
  postgresUnreachable,
  publicOrderId,
  runMixedLoad,
  runNode,
  type Skipped,
  sessionId,
  signIn,
  startServer,
} from './support.ts';

const ROUNDS = 2;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 1.2;
const SMALL = 10_000;
const LARGE = 1_000_000;
/** Random rows each read rotates over. */
const SAMPLE = 5_000;
const PASSWORD = 'bench password, long enough';
const HOURLY_TOOL_CALLS = 300;
/** Enough grants for this many list_orders calls per second with every grant under its hourly limit. */
const PLANNED_CALLS_PER_SECOND = 3_000;

const ENDPOINTS = {
  create: 'E1 `POST /api/checkout/v2/payment_session`',
  read: '`GET /api/checkout/v2/payment_session/{id}`',
  challenge: 'E3 challenge `GET /x402/session/{id}`',
  receipt: 'E4 `GET /checkout/v2/orders/receipt/{id}`',
  listOrders: 'MCP `tools/call list_orders` (page 1)',
  ordersPage: '`GET /dashboard/orders?after=…`',
} as const;
type Endpoint = keyof typeof ENDPOINTS;
type Size = 'small' | 'large';
type Measured = Record<Endpoint, LoadResult>;
type Figures =
  | { engine: Engine; rows: Record<Size, number>; small: Measured; large: Measured; ratios: Record<Endpoint, number>; fillSeconds: number }
  | Skipped;

/** `SAMPLE` numbers drawn at random from 0 … count - 1. */
const sample = (count: number) => Array.from({ length: SAMPLE }, () => Math.floor(Math.random() * count));

const LIST_ORDERS = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_orders', arguments: { page: 1, size: 20 } } });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

type Target = { size: Size; rows: number; base: string; kinds: Record<Endpoint, MixedKind>; server: ChildServer; stop(): Promise<void> };

/** A database filled with `rows` sessions and orders, its merchant, user and agent grants, and `till serve` on it. */
async function startTarget(
  engine: Engine,
  size: Size,
  rows: number,
  sandbox: SpawnedSandbox,
  grants: number,
  log: (line: string) => void,
): Promise<Target & { fillSeconds: number }> {
  const storage = await createBenchStorage(engine, `till-bench-growth-${size}-`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({
    ...storage.settings,
    PORT: String(port),
    TILL_BASE_URL: base,
    TILL_LOG_LEVEL: 'warn',
    TILL_NO_SANDBOX: 'true',
    ...sandboxSettings(sandbox),
  });
  const databaseUrl = storage.settings.TILL_DATABASE_URL;
  try {
    const { merchantId, apiKey } = await createMerchantWithCli(env, newAccount().address as Address);
    const email = `bench-${engine}-${size}@shop.example`;
    const handle = openBenchDatabase(engine, databaseUrl);
    await createUser(handle.db, { merchantId, email, password: PASSWORD });
    await handle.close();
    const started = performance.now();
    await fillSessionsAndOrders(engine, databaseUrl, merchantId, rows);
    const fillSeconds = (performance.now() - started) / 1000;
    log(`  ${engine.padEnd(8)} ${rows} sessions and orders filled in ${fmt(fillSeconds, 1)} s`);
    const tokens = JSON.parse(
      await runNode(['bench/servers/mcp-grants.ts'], { ...env, BENCH_MERCHANT_ID: merchantId, BENCH_AGENTS: String(grants), BENCH_SCOPES: 'orders:read' }),
    ) as string[];
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    try {
      const cookie = await signIn(base, email, PASSWORD);
      const api = apiHeaders(apiKey);
      const kinds: Record<Endpoint, MixedKind> = {
        create: {
          method: 'POST',
          paths: [SESSIONS_PATH],
          headers: api,
          body: JSON.stringify({ amount: 12.5, currency: 'EUR', orderId: 'growth-[<id>]', concept: 'Benchmark order' }),
          expectedStatus: 201,
        },
        read: { method: 'GET', paths: sample(rows).map((i) => `${SESSIONS_PATH}/${sessionId(i)}`), headers: api, expectedStatus: 200 },
        challenge: { method: 'GET', paths: sample(rows).map((i) => `/x402/session/${sessionId(i)}`), headers: {}, expectedStatus: 402 },
        receipt: { method: 'GET', paths: sample(rows).map((i) => `/checkout/v2/orders/receipt/${publicOrderId(i)}`), headers: {}, expectedStatus: 200 },
        listOrders: {
          method: 'POST',
          paths: ['/mcp'],
          headers: MCP_HEADERS,
          headerSets: tokens.map((token) => ({ authorization: `Bearer ${token}` })),
          body: LIST_ORDERS,
          expectedStatus: 200,
          jsonRpc: true,
        },
        ordersPage: { method: 'GET', paths: sample(rows).map((i) => `/dashboard/orders?after=${ordersCursor(i)}`), headers: { cookie }, expectedStatus: 200 },
      };
      await probe(base, kinds);
      return {
        size,
        rows,
        base,
        kinds,
        server,
        fillSeconds,
        stop: async () => {
          await server.stop();
          await storage.drop();
        },
      };
    } catch (error) {
      await server.stop();
      throw failureWithOutput(error, server);
    }
  } catch (error) {
    await storage.drop();
    throw error;
  }
}

/** One request of each kind, checked before any load: a bench of error answers measures nothing. */
async function probe(base: string, kinds: Record<Endpoint, MixedKind>): Promise<void> {
  for (const [name, kind] of Object.entries(kinds)) {
    const response = await fetch(base + kind.paths[0], {
      method: kind.method,
      headers: { ...kind.headers, ...kind.headerSets?.[0] },
      ...(kind.body === undefined ? {} : { body: kind.body.replace('[<id>]', 'probe') }),
    });
    const body = await response.text();
    if (response.status !== kind.expectedStatus || (kind.jsonRpc && /"isError"\s*:\s*true|"error"\s*:/.test(body)))
      throw new Error(`${name} answered the probe with ${response.status}: ${body.slice(0, 400)}`);
  }
}

async function benchEngine(engine: Engine, sandbox: SpawnedSandbox, options: BenchOptions, log: (line: string) => void): Promise<Figures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const large = options.rows ?? LARGE;
  const grants = Math.ceil((PLANNED_CALLS_PER_SECOND * (WARMUP_SECONDS + ROUNDS * options.durationSeconds)) / (HOURLY_TOOL_CALLS - 1));
  const targets: Target[] = [];
  let fillSeconds = 0;
  try {
    for (const [size, rows] of [
      ['small', SMALL],
      ['large', large],
    ] as const) {
      const target = await startTarget(engine, size, rows, sandbox, grants, log);
      targets.push(target);
      fillSeconds += target.fillSeconds;
    }
    const runs: Record<Size, Record<Endpoint, LoadResult[]>> = { small: emptyRuns(), large: emptyRuns() };
    const load = (target: Target, endpoint: Endpoint, durationSeconds: number) =>
      runMixedLoad({ origin: target.base, kinds: [target.kinds[endpoint]], connections: options.connections, durationSeconds });
    for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[]) for (const target of targets) await load(target, endpoint, WARMUP_SECONDS);
    // Each round alternates the two sizes, and the second round starts with the other one, so a noisy machine's drift falls on both.
    for (let round = 0; round < ROUNDS; round++) {
      for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[]) {
        for (const target of round % 2 ? [...targets].reverse() : targets) {
          const result = await load(target, endpoint, options.durationSeconds);
          log(
            `  ${engine.padEnd(8)} ${target.size.padEnd(5)} ${endpoint.padEnd(10)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms${result.failures ? `  ${result.failures} FAILED` : ''}`,
          );
          runs[target.size][endpoint].push(result);
        }
      }
    }
    const small = averaged(runs.small);
    const largeFigures = averaged(runs.large);
    const ratios = Object.fromEntries((Object.keys(ENDPOINTS) as Endpoint[]).map((e) => [e, largeFigures[e].latencyP99 / small[e].latencyP99])) as Record<
      Endpoint,
      number
    >;
    return { engine, rows: { small: SMALL, large }, small, large: largeFigures, ratios, fillSeconds };
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${targets.map((t) => t.server.output()).join('\n')}`);
  } finally {
    for (const target of targets) await target.stop();
  }
}

const emptyRuns = () => Object.fromEntries(Object.keys(ENDPOINTS).map((e) => [e, []])) as unknown as Record<Endpoint, LoadResult[]>;
const averaged = (runs: Record<Endpoint, LoadResult[]>) =>
  Object.fromEntries(Object.entries(runs).map(([e, results]) => [e, averageLoad(results)])) as Record<Endpoint, LoadResult>;
const count = (rows: number) => (rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${rows / 1_000}k`);

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const sandbox = await spawnSandbox();
  const figures: Figures[] = [];
  try {
    for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, sandbox, options, log));
  } finally {
    await sandbox.stop();
  }
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine busy with other jobs: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} runs of each request per size, the two sizes served side by side and alternated; figures are the means. Reads rotate over ${SAMPLE} rows drawn at random from the whole fill. Target: p99 at the large fill ≤ ${TARGET_RATIO}× p99 at 10k.`,
  ];
  const summary: string[] = [];
  for (const figure of figures) {
    lines.push('');
    if ('skipped' in figure) {
      lines.push(`${figure.engine}: skipped — ${figure.skipped}`);
      summary.push(`${figure.engine}: skipped — ${figure.skipped}`);
      continue;
    }
    const [small, large] = [count(figure.rows.small), count(figure.rows.large)];
    lines.push(
      `| Engine | Request, sessions and orders in the database | req/s | p50 ms | p99 ms | p99 ${large} / ${small} |`,
      '|---|---|---:|---:|---:|---:|',
    );
    const misses: string[] = [];
    for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[]) {
      const ratio = figure.ratios[endpoint];
      if (!(ratio <= TARGET_RATIO)) misses.push(`${endpoint} ${fmt(ratio, 2)}`);
      lines.push(loadRow(figure.engine, `${ENDPOINTS[endpoint]}, ${small}`, figure.small[endpoint], ''));
      lines.push(loadRow(figure.engine, `${ENDPOINTS[endpoint]}, ${large}`, figure.large[endpoint], `**${fmt(ratio, 2)}**`));
    }
    summary.push(
      `${figure.engine}: p99 ${large} / ${small}: ${(Object.keys(ENDPOINTS) as Endpoint[]).map((e) => `${e} ${fmt(figure.ratios[e], 2)}`).join(', ')} → ${misses.length ? `ABOVE the ${TARGET_RATIO} target for ${misses.join(', ')}` : `every one meets the ${TARGET_RATIO} target`}; filled in ${fmt(figure.fillSeconds, 1)} s`,
    );
  }
  return { name: 'growth', summary: summary.join('\n'), markdown: lines.join('\n') };
}
