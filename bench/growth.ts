// How the cost of the hot paths grows with the database: p99 of E1, the session read, the x402
// challenge, the E4 receipt, the MCP tool list_orders and the dashboard's orders page, with 10,000
// sessions (and orders) in one database and 1,000,000 in another, served side by side and measured
// alternately in the same run, on SQLite and PostgreSQL (target: p99 at 1M at most 1.2× p99 at 10k,
// in every run). The databases are filled with a few INSERT … SELECT statements over a generated
// series, straight into the tables; the reads take ids drawn at random from the whole loaded set.
// The session read and the challenge are measured twice, since a cache decides what they cost:
// warm (sessions read just before, so their rows and their encoded challenges are cached) and cold
// (sessions that server has never been asked about, each asked once).
import { sql } from 'kysely';
import type { Address } from 'viem';
import { createUser } from '../src/accounts/users.ts';
import { MAX_TIMEOUT_SECONDS } from '../src/common/network.ts';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort, sandboxSettings } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { apiHeaders, SESSIONS_PATH } from '../src/testing/shop.ts';
import { QUOTE_TTL_MS } from '../src/x402/protocol.ts';
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

const ROUNDS = 3;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 1.2;
const SMALL = 10_000;
const LARGE = 1_000_000;
/** Random rows each read rotates over. */
const SAMPLE = 5_000;
/** Sessions a warm run rotates over, each read once just before it. */
const WARM_SET = 1_000;
/** Sessions of one cold run, each asked once: never asked before, and never again. */
const COLD_SET = 1_000;
/** How long a challenge stays cached: its quote is reused while payable for a whole maxTimeoutSeconds. */
const CHALLENGE_REUSE_MS = QUOTE_TTL_MS - MAX_TIMEOUT_SECONDS * 1000;
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
/** The requests a cache decides: measured warm and cold. */
const SPLIT = ['read', 'challenge'] as const;
type SplitEndpoint = (typeof SPLIT)[number];
type Temperature = 'warm' | 'cold';
const TEMPERATURES: Record<SplitEndpoint, Record<Temperature, string>> = {
  read: { warm: 'warm (read just before)', cold: 'cold (never read before)' },
  challenge: { warm: 'warm (from the challenge cache)', cold: 'cold (first challenge: read, new quote, encode)' },
};
/** What is measured and compared: each endpoint, the split ones once warm and once cold. */
type Series = { key: string; endpoint: Endpoint; temperature?: Temperature };
const SERIES: Series[] = (Object.keys(ENDPOINTS) as Endpoint[]).flatMap((endpoint): Series[] =>
  (SPLIT as readonly string[]).includes(endpoint)
    ? (['warm', 'cold'] as const).map((temperature) => ({ key: `${endpoint} ${temperature}`, endpoint, temperature }))
    : [{ key: endpoint, endpoint }],
);
type Size = 'small' | 'large';
/** One run, with the share of challenges answered from the cache where that is known. */
type Run = LoadResult & { cached?: number };
type SeriesFigures = { small: Run; large: Run; ratios: number[]; worst: number };
type Figures =
  | { engine: Engine; rows: Record<Size, number>; bytes: Record<Size, number>; series: Record<string, SeriesFigures>; fillSeconds: number }
  | Skipped;

/** `count` distinct numbers drawn at random from 0 … rows - 1. */
function distinct(count: number, rows: number): number[] {
  if (count > rows) throw new Error(`${count} distinct rows asked of ${rows}`);
  if (count * 2 > rows) {
    const all = Array.from({ length: rows }, (_, i) => i);
    for (let i = 0; i < count; i++) {
      const j = i + Math.floor(Math.random() * (rows - i));
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    return all.slice(0, count);
  }
  const drawn = new Set<number>();
  while (drawn.size < count) drawn.add(Math.floor(Math.random() * rows));
  return [...drawn];
}

/** `SAMPLE` numbers drawn at random from 0 … rows - 1, none of `reserved`. */
function sample(rows: number, reserved: Set<number>): number[] {
  return Array.from({ length: SAMPLE }, () => {
    for (;;) {
      const i = Math.floor(Math.random() * rows);
      if (!reserved.has(i)) return i;
    }
  });
}

const LIST_ORDERS = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_orders', arguments: { page: 1, size: 20 } } });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/**
 * The paths of the warm and cold runs: a warm set, and one cold set per round, all disjoint; the
 * other reads draw from the rest, so nothing else warms a cold set.
 */
type SplitPaths = { warm: string[]; cold: string[][] };
type Target = {
  size: Size;
  rows: number;
  bytes: number;
  base: string;
  kinds: Record<Endpoint, MixedKind>;
  split: Record<SplitEndpoint, SplitPaths>;
  server: ChildServer;
  stop(): Promise<void>;
};

const SPLIT_PATH: Record<SplitEndpoint, (i: number) => string> = {
  read: (i) => `${SESSIONS_PATH}/${sessionId(i)}`,
  challenge: (i) => `/x402/session/${sessionId(i)}`,
};

/** The warm set (shared by the read and the challenge) and each round's cold sets, and every number they take. */
function splitPaths(rows: number): { split: Record<SplitEndpoint, SplitPaths>; reserved: Set<number> } {
  const drawn = distinct(WARM_SET + SPLIT.length * ROUNDS * COLD_SET, rows);
  const warm = drawn.slice(0, WARM_SET);
  const split = Object.fromEntries(
    SPLIT.map((endpoint, e) => [
      endpoint,
      {
        warm: warm.map(SPLIT_PATH[endpoint]),
        cold: Array.from({ length: ROUNDS }, (_, round) => {
          const from = WARM_SET + (e * ROUNDS + round) * COLD_SET;
          return drawn.slice(from, from + COLD_SET).map(SPLIT_PATH[endpoint]);
        }),
      },
    ]),
  ) as Record<SplitEndpoint, SplitPaths>;
  return { split, reserved: new Set(drawn) };
}

/** Bytes the database takes: the SQLite file's pages, or the PostgreSQL database. */
async function databaseBytes(engine: Engine, databaseUrl: string): Promise<number> {
  const handle = openBenchDatabase(engine, databaseUrl);
  try {
    const query =
      engine === 'sqlite'
        ? sql<{ bytes: number }>`SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()`
        : sql<{ bytes: string }>`SELECT pg_database_size(current_database()) AS bytes`;
    return Number((await query.execute(handle.db)).rows[0]!.bytes);
  } finally {
    await handle.close();
  }
}

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
    const bytes = await databaseBytes(engine, databaseUrl);
    log(`  ${engine.padEnd(8)} ${rows} sessions and orders filled in ${fmt(fillSeconds, 1)} s (${fmt(bytes / 2 ** 20)} MiB)`);
    const tokens = JSON.parse(
      await runNode(['bench/servers/mcp-grants.ts'], { ...env, BENCH_MERCHANT_ID: merchantId, BENCH_AGENTS: String(grants), BENCH_SCOPES: 'orders:read' }),
    ) as string[];
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    try {
      const cookie = await signIn(base, email, PASSWORD);
      const api = apiHeaders(apiKey);
      const { split, reserved } = splitPaths(rows);
      const kinds: Record<Endpoint, MixedKind> = {
        create: {
          method: 'POST',
          paths: [SESSIONS_PATH],
          headers: api,
          body: JSON.stringify({ amount: 12.5, currency: 'EUR', orderId: 'growth-[<id>]', concept: 'Benchmark order' }),
          expectedStatus: 201,
        },
        // The warm set: the warm-up and the probe touch nothing else of the two.
        read: { method: 'GET', paths: split.read.warm, headers: api, expectedStatus: 200 },
        challenge: { method: 'GET', paths: split.challenge.warm, headers: {}, expectedStatus: 402 },
        receipt: {
          method: 'GET',
          paths: sample(rows, reserved).map((i) => `/checkout/v2/orders/receipt/${publicOrderId(i)}`),
          headers: {},
          expectedStatus: 200,
        },
        listOrders: {
          method: 'POST',
          paths: ['/mcp'],
          headers: MCP_HEADERS,
          headerSets: tokens.map((token) => ({ authorization: `Bearer ${token}` })),
          body: LIST_ORDERS,
          expectedStatus: 200,
          jsonRpc: true,
        },
        ordersPage: {
          method: 'GET',
          paths: sample(rows, reserved).map((i) => `/dashboard/orders?after=${ordersCursor(i)}`),
          headers: { cookie },
          expectedStatus: 200,
        },
      };
      await probe(base, kinds);
      return {
        size,
        rows,
        bytes,
        base,
        kinds,
        split,
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

/** The challenges this server has answered from its cache so far (its `/metrics`). */
async function challengesCached(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^till_x402_challenges_cached_total(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}

async function benchEngine(engine: Engine, sandbox: SpawnedSandbox, options: BenchOptions, log: (line: string) => void): Promise<Figures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const large = options.rows ?? LARGE;
  if (!(large >= SMALL)) throw new Error(`--rows must be at least ${SMALL}`);
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
    const runs: Record<Size, Record<string, Run[]>> = { small: emptyRuns(), large: emptyRuns() };
    const load = (target: Target, kind: MixedKind, job: { durationSeconds: number } | { amount: number }) =>
      runMixedLoad({ origin: target.base, kinds: [kind], connections: options.connections, ...job });
    /** When each server's warm challenges were last made: they stay cached CHALLENGE_REUSE_MS from then. */
    const primed = new Map<Target, number>();
    const measure = async (target: Target, series: Series, round: number): Promise<Run> => {
      const kind = target.kinds[series.endpoint];
      if (!series.temperature) return load(target, kind, { durationSeconds: options.durationSeconds });
      const split = target.split[series.endpoint as SplitEndpoint];
      const challenge = series.endpoint === 'challenge';
      let job: { durationSeconds: number } | { amount: number };
      let paths: string[];
      if (series.temperature === 'warm') {
        // Every warm challenge is made anew (its last quote is past reuse) and cached just before the
        // run, so none runs out during it; the read is primed the same way, for its pages.
        if (challenge) {
          const wait = (primed.get(target) ?? Number.NEGATIVE_INFINITY) + CHALLENGE_REUSE_MS + 1_000 - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        await load(target, { ...kind, paths: split.warm }, { amount: split.warm.length });
        if (challenge) primed.set(target, performance.now());
        paths = split.warm;
        job = { durationSeconds: options.durationSeconds };
      } else {
        paths = split.cold[round]!;
        job = { amount: paths.length };
      }
      const before = challenge ? await challengesCached(target.base) : 0;
      const result: Run = await load(target, { ...kind, paths }, job);
      if (challenge) result.cached = ((await challengesCached(target.base)) - before) / result.total;
      return result;
    };
    for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[])
      for (const target of targets) {
        await load(target, target.kinds[endpoint], { durationSeconds: WARMUP_SECONDS });
        if (endpoint === 'challenge') primed.set(target, performance.now());
      }
    // Each round alternates the two sizes, and the next round starts with the other one, so a noisy machine's drift falls on both.
    for (let round = 0; round < ROUNDS; round++) {
      for (const series of SERIES) {
        for (const target of round % 2 ? [...targets].reverse() : targets) {
          const result = await measure(target, series, round);
          log(
            `  ${engine.padEnd(8)} run ${round + 1} ${target.size.padEnd(5)} ${series.key.padEnd(14)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms${result.cached === undefined ? '' : `  ${fmt(result.cached * 100)}% from the cache`}${result.failures ? `  ${result.failures} FAILED` : ''}`,
          );
          runs[target.size][series.key]!.push(result);
        }
      }
    }
    const figures = Object.fromEntries(
      SERIES.map(({ key }) => {
        const [small, largeRuns] = [runs.small[key]!, runs.large[key]!];
        const ratios = largeRuns.map((result, round) => result.latencyP99 / small[round]!.latencyP99);
        return [key, { small: averaged(small), large: averaged(largeRuns), ratios, worst: Math.max(...ratios) }];
      }),
    );
    return {
      engine,
      rows: { small: SMALL, large },
      bytes: { small: targets[0]!.bytes, large: targets[1]!.bytes },
      series: figures,
      fillSeconds,
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${targets.map((t) => t.server.output()).join('\n')}`);
  } finally {
    for (const target of targets) await target.stop();
  }
}

const emptyRuns = () => Object.fromEntries(SERIES.map(({ key }) => [key, []])) as Record<string, Run[]>;
const averaged = (results: Run[]): Run => {
  const mean = averageLoad(results);
  const cached = results.map((r) => r.cached).filter((c) => c !== undefined);
  return cached.length ? { ...mean, cached: cached.reduce((sum, c) => sum + c, 0) / cached.length } : mean;
};
const count = (rows: number) => (rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${rows / 1_000}k`);
const label = (series: Series) =>
  `${ENDPOINTS[series.endpoint]}${series.temperature ? `, ${TEMPERATURES[series.endpoint as SplitEndpoint][series.temperature]}` : ''}`;
const mib = (bytes: number) => `${fmt(bytes / 2 ** 20)} MiB`;

/** A row of the figures: means of the runs, then each run's p99 ratio and the worst of them. */
function row(engine: Engine, what: string, result: Run, ratios: string, worst: string): string {
  const failures = result.failures ? ` (${result.failures} failed)` : '';
  const cached = result.cached === undefined ? '' : `${fmt(result.cached * 100)}%`;
  return `| ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${what} | ${fmt(result.requestsPerSecond, 0)}${failures} | ${fmt(result.latencyP50, 1)} | ${fmt(result.latencyP99, 1)} | ${cached} | ${ratios} | ${worst} |`;
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const sandbox = await spawnSandbox();
  const figures: Figures[] = [];
  try {
    for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, sandbox, options, log));
  } finally {
    await sandbox.stop();
  }
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine busy with other jobs: ${options.connections} connections, ${ROUNDS} runs of each request per size after a ${WARMUP_SECONDS} s warm-up, the two sizes served side by side and alternated. req/s, p50 and p99 are the means of the runs; the ratio is each run's p99 at the large fill over the same run's p99 at 10k, and the verdict is the worst run. Target: p99 at the large fill ≤ ${TARGET_RATIO}× p99 at 10k in every run.`,
    '',
    `Runs of ${options.durationSeconds} s rotate over ${SAMPLE} rows drawn at random from the whole fill. The session read and the challenge are measured warm and cold, since a cache decides what they cost. Warm: ${WARM_SET} sessions, each asked once just before the run (on the challenge, after its last quote is past reuse, so each is made anew and cached), then asked in turn for ${options.durationSeconds} s: the challenge is answered from the instance's cache of encoded challenges, the read from rows already read (in SQLite's page cache or PostgreSQL's shared buffers). Cold: ${COLD_SET} sessions the server was never asked about, each asked once (a run of ${COLD_SET} requests; each run its own sessions): the challenge reads the session, makes and stores a quote and encodes the answer. The operating system's page cache still holds the database files in both (on SQLite it is all of the file), so cold means not read by the service before, not read from the disk. "From the cache" is the share of challenges the instance answered from its cache (its \`/metrics\`).`,
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
      `${figure.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: the database takes ${mib(figure.bytes.small)} at ${small}, ${mib(figure.bytes.large)} at ${large}.`,
      '',
      `| Engine | Request, sessions and orders in the database | req/s | p50 ms | p99 ms | From the cache | p99 ${large} / ${small}, each run | Worst run |`,
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    const misses: string[] = [];
    for (const series of SERIES) {
      const { small: smallRun, large: largeRun, ratios, worst } = figure.series[series.key]!;
      if (!(worst <= TARGET_RATIO)) misses.push(`${series.key} ${fmt(worst, 2)}`);
      lines.push(row(figure.engine, `${label(series)}, ${small}`, smallRun, '', ''));
      lines.push(row(figure.engine, `${label(series)}, ${large}`, largeRun, ratios.map((r) => fmt(r, 2)).join(' · '), `**${fmt(worst, 2)}**`));
    }
    summary.push(
      `${figure.engine}: p99 ${large} / ${small}, worst of ${ROUNDS} runs: ${SERIES.map(({ key }) => `${key} ${fmt(figure.series[key]!.worst, 2)}`).join(', ')} → ${misses.length ? `ABOVE the ${TARGET_RATIO} target for ${misses.join(', ')}` : `every one meets the ${TARGET_RATIO} target`}; filled in ${fmt(figure.fillSeconds, 1)} s`,
    );
  }
  return { name: 'growth', summary: summary.join('\n'), markdown: lines.join('\n') };
}
