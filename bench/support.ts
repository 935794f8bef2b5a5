import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/index.ts';
import { createServiceStorage, createTestDatabase, type Engine, sandboxSettings } from '../src/testing/environment.ts';

/** What every bench module's `run` returns: lines for the terminal and the figures for bench/README.md. */
export type BenchReport = { name: string; summary: string; markdown: string };

export type BenchOptions = {
  durationSeconds: number;
  connections: number;
  /** The memory bench's number of requests (`--requests`). */
  requests?: number;
  /** The growth bench's large fill, in sessions (`--rows`). */
  rows?: number;
};

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The PostgreSQL server where throwaway databases are made; the same setting as the test suite's. */
export const POSTGRES_URL = process.env.TILL_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type { Engine };

/** A fresh SQLite file or PostgreSQL database, made and dropped the way the tests do it. */
export function createBenchDatabase(engine: Engine): Promise<{ url: string; drop(): Promise<void> }> {
  return createTestDatabase(engine, POSTGRES_URL);
}

/** A fresh database, data folder and secret key for a service under load, made the way the tests do it. */
export function createBenchStorage(engine: Engine, prefix: string) {
  return createServiceStorage(engine, { postgresUrl: POSTGRES_URL, prefix });
}

/** `till merchant create` as an operator runs it, in the service's environment; the merchant and its key. */
export async function createMerchantWithCli(env: Record<string, string>, walletAddress?: string): Promise<{ merchantId: string; apiKey: string }> {
  return JSON.parse(
    await runNode(['src/cli/main.ts', 'merchant', 'create', '--name', 'Bench', ...(walletAddress ? ['--wallet', walletAddress] : []), '--json'], env),
  );
}

/** The nearest-rank `p`th percentile of `values` (0 when there are none). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
export const fmt = (value: number, digits = 0) => value.toFixed(digits);

/** The environment a child gets: only what it needs, so settings of the calling shell do not leak in. */
export function childEnv(settings: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR']) if (process.env[name]) env[name] = process.env[name];
  // Loads far above the per-key session limit: it is still counted on every request, never reached.
  return { ...env, TILL_SESSIONS_PER_MINUTE_PER_KEY: '1000000000', ...settings };
}

/**
 * The environment of a `till serve` under load: its storage, port and base URL, warnings only, paying
 * through `sandbox` (without starting one of its own), the proof limits far above any load here, and `settings`.
 */
export function serviceEnv(
  storage: { settings: Record<string, string> },
  port: number,
  sandbox: Parameters<typeof sandboxSettings>[0],
  settings: Record<string, string> = {},
): Record<string, string> {
  return childEnv({
    ...storage.settings,
    TILL_BASE_URL: `http://127.0.0.1:${port}`,
    PORT: String(port),
    TILL_LOG_LEVEL: 'warn',
    TILL_NO_SANDBOX: 'true',
    ...sandboxSettings(sandbox),
    TILL_X402_PROOFS_PER_MINUTE_PER_IP: '1000000',
    TILL_X402_PROOFS_PER_MINUTE_PER_PAYER: '1000000',
    TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '1000000',
    TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT: '1000000',
    ...settings,
  });
}

export type ChildServer = { process: ChildProcess; output(): string; stop(): Promise<void> };

/** A bench failure with the output of the server under load appended, which usually says why. */
export function failureWithOutput(error: unknown, server: { output(): string }): Error {
  const cause = (error as Error).cause;
  return new Error(`${(error as Error).message}${cause instanceof Error ? ` (${cause.message})` : ''}\n${(error as Error).stack}\n${server.output()}`);
}

/** Runs `node …args` from the repository root and waits until `readyUrl` answers anything. */
export async function startServer(args: string[], env: Record<string, string>, readyUrl: string): Promise<ChildServer> {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit');
  const server: ChildServer = {
    process: child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`node ${args.join(' ')} exited with ${child.exitCode} before serving:\n${output}`);
    try {
      await fetch(readyUrl);
      return server;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  await server.stop();
  throw new Error(`node ${args.join(' ')} did not answer ${readyUrl} within 30 s:\n${output}`);
}

/** Runs `node …args` to completion and returns its standard output. */
export async function runNode(args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited with ${code}:\n${stderr}${stdout}`);
  return stdout;
}

export type LoadRequest = { url: string; method: 'GET' | 'POST' | 'PUT'; headers: Record<string, string>; body?: string };

export type LoadResult = {
  requestsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  total: number;
  /** Answers other than the expected (any 2xx unless named) plus connection errors and timeouts: a run with any is not a fair figure. */
  failures: number;
};

const AUTOCANNON = fileURLToPath(import.meta.resolve('autocannon'));

type AutocannonResult = {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number }>;
  non2xx: number;
  errors: number;
  timeouts: number;
};

function loadResult(result: AutocannonResult, expectedStatus: number | undefined): LoadResult {
  const unexpected = expectedStatus === undefined ? result.non2xx : result.requests.total - (result.statusCodeStats?.[String(expectedStatus)]?.count ?? 0);
  return {
    requestsPerSecond: result.requests.average,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    total: result.requests.total,
    failures: unexpected + result.errors + result.timeouts,
  };
}

/**
 * autocannon in a process of its own, so the load generator shares no event loop with the
 * orchestrator. `[<id>]` in the body becomes a fresh random id on every request. Every answer
 * should be a 2xx, or have `expectedStatus` when that is given.
 */
export async function runLoad(request: LoadRequest, load: { connections: number; durationSeconds: number }, expectedStatus?: number): Promise<LoadResult> {
  const args = [AUTOCANNON, '--json', '--no-progress', '-c', String(load.connections), '-d', String(load.durationSeconds), '-m', request.method];
  for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}=${value}`);
  if (request.body !== undefined) args.push('-b', request.body, '--idReplacement');
  args.push(request.url);
  return loadResult(JSON.parse(await runNode(args, childEnv({}))) as AutocannonResult, expectedStatus);
}

/** One kind of request of a mixed load: each of its requests takes the next path and header set in turn. */
export type MixedKind = {
  method: 'GET' | 'POST' | 'PUT';
  paths: string[];
  headers: Record<string, string>;
  headerSets?: Record<string, string>[];
  /** `[<id>]` becomes a fresh id on every request. */
  body?: string;
  expectedStatus: number;
  /** A JSON-RPC error or a tool error in the body counts as a failure too. */
  jsonRpc?: boolean;
};

/** A load of requests that change from one to the next (bench/servers/load-rotating.ts): the kinds taken in turn, for a duration or a number of requests. */
export type MixedJob = { origin: string; kinds: MixedKind[]; connections: number; durationSeconds?: number; amount?: number };

/** Like runLoad, for a MixedJob: autocannon's API in a process of its own. */
export async function runMixedLoad(job: MixedJob): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'till-bench-load-'));
  try {
    const file = join(dir, 'job.json');
    writeFileSync(file, JSON.stringify(job));
    const result = JSON.parse(await runNode(['bench/servers/load-rotating.ts', file], childEnv({}))) as AutocannonResult & { unexpected: number };
    return { ...loadResult(result, undefined), failures: result.unexpected + result.errors + result.timeouts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Like runLoad, with each request taking the next of `headerSets` in turn; an answer whose body is
 * a JSON-RPC error or a tool error counts as a failure too.
 */
export function runRotatingLoad(
  request: LoadRequest,
  headerSets: Record<string, string>[],
  load: { connections: number; durationSeconds: number },
): Promise<LoadResult> {
  const url = new URL(request.url);
  return runMixedLoad({
    origin: url.origin,
    kinds: [
      {
        method: request.method,
        paths: [url.pathname + url.search],
        headers: request.headers,
        headerSets,
        body: request.body,
        expectedStatus: 200,
        jsonRpc: true,
      },
    ],
    ...load,
  });
}

/** The mean of several runs of one load. */
export function averageLoad(results: LoadResult[]): LoadResult {
  return {
    requestsPerSecond: mean(results.map((r) => r.requestsPerSecond)),
    latencyP50: mean(results.map((r) => r.latencyP50)),
    latencyP99: mean(results.map((r) => r.latencyP99)),
    total: results.reduce((sum, r) => sum + r.total, 0),
    failures: results.reduce((sum, r) => sum + r.failures, 0),
  };
}

/** Why PostgreSQL cannot be benched here, or undefined when it can (always undefined for SQLite). */
export async function postgresUnreachable(engine: Engine): Promise<string | undefined> {
  if (engine !== 'postgres') return undefined;
  try {
    await (await createBenchDatabase('postgres')).drop();
    return undefined;
  } catch (error) {
    return `PostgreSQL unreachable (${(error as Error).message})`;
  }
}

/** One row of a figures table: engine, what was measured, req/s, p50, p99, and a ratio cell. */
export function loadRow(engine: Engine, label: string, result: LoadResult, ratio: string): string {
  const failures = result.failures ? ` (${result.failures} failed)` : '';
  return `| ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${label} | ${fmt(result.requestsPerSecond, 0)}${failures} | ${fmt(result.latencyP50, 1)} | ${fmt(result.latencyP99, 1)} | ${ratio} |`;
}

export type Skipped = { engine: Engine; skipped: string };

/**
 * A report of per-engine figures judged by a ratio against a target: the intro line, a table with
 * the given label and ratio columns, and a one-line summary per engine.
 */
export function ratioReport<F extends { engine: Engine; ratio: number }>(spec: {
  name: string;
  intro: string;
  labelColumn: string;
  ratioColumn: string;
  /** The ratio to reach, or per figure (engines may have their own). */
  target: number | ((figure: F) => number);
  figures: (F | Skipped)[];
  rows: (figure: F) => string[];
  summary: (figure: F, verdict: string) => string;
}): BenchReport {
  const lines = [spec.intro, '', `| Engine | ${spec.labelColumn} | req/s | p50 ms | p99 ms | ${spec.ratioColumn} |`, '|---|---|---:|---:|---:|---:|'];
  const summary: string[] = [];
  for (const figure of spec.figures) {
    if ('skipped' in figure) {
      lines.push(`| ${figure.engine} | skipped: ${figure.skipped} | | | | |`);
      summary.push(`${figure.engine}: skipped — ${figure.skipped}`);
      continue;
    }
    const target = typeof spec.target === 'number' ? spec.target : spec.target(figure);
    const verdict = figure.ratio >= target ? `meets the ${target} target` : `BELOW the ${target} target`;
    lines.push(...spec.rows(figure));
    summary.push(spec.summary(figure, verdict));
  }
  return { name: spec.name, summary: summary.join('\n'), markdown: lines.join('\n') };
}

// Databases filled straight through SQL (no API), for the benches that measure a grown database.

const EPOCH = Date.parse('2026-01-01T00:00:00Z');

/** The rows `from` … `from + count - 1` as a table `n(i)`, and an integer written as upper-case hex of `width` digits. */
function dialect(engine: Engine) {
  return engine === 'sqlite'
    ? {
        series: (from: number, count: number) =>
          sql.raw(`(WITH RECURSIVE s(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM s WHERE i < ${from + count - 1}) SELECT i FROM s) AS n`),
        hex: (expr: string, width: number) => sql.raw(`printf('%0${width}X', ${expr})`),
      }
    : {
        series: (from: number, count: number) => sql.raw(`generate_series(${from}, ${from + count - 1}) AS n(i)`),
        hex: (expr: string, width: number) => sql.raw(`lpad(upper(to_hex(${expr})), ${width}, '0')`),
      };
}

/** Session number i, as the fill writes it. */
export const sessionId = (i: number) => `ps_bench${i}`;
export const publicOrderId = (i: number) => `TX-${i.toString(16).toUpperCase().padStart(32, '0')}`;
/** The orders page's cursor just above order number i (the page lists i and older). */
export const ordersCursor = (i: number) => `${EPOCH + (i + 1) * 1000}.pay_bench${i + 1}`;

export const openBenchDatabase = (engine: Engine, databaseUrl: string) =>
  openDatabase({
    databaseKind: engine,
    databaseUrl,
    sqlitePath: engine === 'sqlite' ? databaseUrl.slice('sqlite:'.length) : undefined,
    databasePoolSize: 2,
  });

/**
 * Sessions number 0 … count - 1 of the merchant, shaped as payment links made through the API (STATIC,
 * OPEN, so each still answers a payable challenge), each with an expired quote and one settled
 * payment (one in 50 reversed), newer as the number grows; then the planner's statistics.
 */
export async function fillSessionsAndOrders(engine: Engine, databaseUrl: string, merchantId: string, count: number): Promise<void> {
  const handle = openBenchDatabase(engine, databaseUrl);
  const { series, hex } = dialect(engine);
  const db = handle.db;
  const epoch = sql.raw(String(EPOCH));
  try {
    await sql`INSERT INTO payment_sessions (id, merchant_id, order_id, order_type, status, amount_minor, currency, editable, concept, created_at, updated_at, version, created_via)
      SELECT 'ps_bench' || i, ${merchantId}, 'bench-' || i, 'STATIC', 'OPEN', 1250, 'EUR', 0, 'Bench item', ${epoch} + i * 1000, ${epoch} + i * 1000, 1, 'api'
      FROM ${series(0, count)}`.execute(db);
    await sql`INSERT INTO payment_quotes (id, session_id, session_version, amount_minor, currency, rate, rate_source, usdc_amount, pay_to, asset, created_at, expires_at)
      SELECT 'q_bench' || i, 'ps_bench' || i, 1, 1250, 'EUR', '1.08', 'fixed', 13500000, '0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002', ${epoch} + i * 1000, ${epoch} + i * 1000
      FROM ${series(0, count)}`.execute(db);
    await sql`INSERT INTO payments (id, session_id, merchant_id, quote_id, status, exclusive, payer, pay_to, asset, value, nonce, valid_after, valid_before, signature,
        amount_minor, currency, rate, public_order_id, tx_hash, block_number, created_at, updated_at, settled_at, finalized_at)
      SELECT 'pay_bench' || i, 'ps_bench' || i, ${merchantId}, 'q_bench' || i, CASE WHEN i % 50 = 0 THEN 'REVERSED' ELSE 'SUCCESS' END, 0,
        '0x' || ${hex('i', 40)}, '0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002', 13500000, 'n' || i, 0, 0, '0x',
        1250, 'EUR', '1.08', 'TX-' || ${hex('i', 32)}, '0x' || ${hex('i', 64)}, i + 1, ${epoch} + i * 1000 + 500, ${epoch} + i * 1000 + 500, ${epoch} + i * 1000 + 500, ${epoch} + i * 1000 + 60500
      FROM ${series(0, count)}`.execute(db);
    await sql.raw(engine === 'sqlite' ? 'PRAGMA optimize' : 'VACUUM ANALYZE').execute(db);
  } finally {
    await handle.close();
  }
}

/** Signs the user in as a browser does and answers the cookies of the signed-in session. */
export async function signIn(base: string, email: string, password: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const form = await fetch(`${base}/sign-in`);
  keep(form);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const answer = await fetch(`${base}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email, password }).toString(),
  });
  keep(answer);
  if (answer.status !== 303) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`);
  return cookie();
}
