import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServiceStorage, createTestDatabase, type Engine } from '../src/testing/environment.ts';

/** What every bench module's `run` returns: lines for the terminal and the figures for bench/README.md. */
export type BenchReport = { name: string; summary: string; markdown: string };

export type BenchOptions = { durationSeconds: number; connections: number };

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

export const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
export const fmt = (value: number, digits = 0) => value.toFixed(digits);

/** The environment a child gets: only what it needs, so settings of the calling shell do not leak in. */
export function childEnv(settings: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR']) if (process.env[name]) env[name] = process.env[name];
  return { ...env, ...settings };
}

export type ChildServer = { process: ChildProcess; output(): string; stop(): Promise<void> };

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

function loadResult(result: AutocannonResult, expectedStatus: number | undefined, otherFailures = 0): LoadResult {
  const unexpected = expectedStatus === undefined ? result.non2xx : result.requests.total - (result.statusCodeStats?.[String(expectedStatus)]?.count ?? 0);
  return {
    requestsPerSecond: result.requests.average,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    total: result.requests.total,
    failures: unexpected + result.errors + result.timeouts + otherFailures,
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

/**
 * Like runLoad, with each request taking the next of `headerSets` in turn (autocannon's API in
 * bench/servers/load-rotating.ts); an answer whose body is a JSON-RPC error or a tool error counts
 * as a failure too.
 */
export async function runRotatingLoad(
  request: LoadRequest,
  headerSets: Record<string, string>[],
  load: { connections: number; durationSeconds: number },
): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'till-bench-load-'));
  try {
    const job = join(dir, 'job.json');
    writeFileSync(job, JSON.stringify({ ...request, headerSets, ...load }));
    const result = JSON.parse(await runNode(['bench/servers/load-rotating.ts', job], childEnv({}))) as AutocannonResult & { bodyFailures: number };
    return loadResult(result, 200, result.bodyFailures);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
