import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Engine } from '../test/helpers/harness.ts';

/** What every bench module's `run` returns: lines for the terminal and the figures for bench/README.md. */
export type BenchReport = { name: string; summary: string; markdown: string };

export type BenchOptions = { durationSeconds: number; connections: number };

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The PostgreSQL server where throwaway databases are made; the same setting as the test suite's. */
export const POSTGRES_URL = process.env.TILL_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type { Engine };

/** A fresh SQLite file or PostgreSQL database, made and dropped the way the tests do it. */
export async function createBenchDatabase(engine: Engine): Promise<{ url: string; drop(): Promise<void> }> {
  process.env.TILL_TEST_POSTGRES_URL = POSTGRES_URL;
  const { createTestDatabase } = await import('../test/helpers/harness.ts');
  return createTestDatabase(engine);
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

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
  /** Responses outside 2xx plus connection errors and timeouts: a run with any is not a fair figure. */
  failures: number;
};

const AUTOCANNON = fileURLToPath(import.meta.resolve('autocannon'));

/**
 * autocannon in a process of its own, so the load generator shares no event loop with the
 * orchestrator. `[<id>]` in the body becomes a fresh random id on every request.
 */
export async function runLoad(request: LoadRequest, load: { connections: number; durationSeconds: number }): Promise<LoadResult> {
  const args = [AUTOCANNON, '--json', '--no-progress', '-c', String(load.connections), '-d', String(load.durationSeconds), '-m', request.method];
  for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}=${value}`);
  if (request.body !== undefined) args.push('-b', request.body, '--idReplacement');
  args.push(request.url);
  const result = JSON.parse(await runNode(args, childEnv({}))) as {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  return {
    requestsPerSecond: result.requests.average,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    total: result.requests.total,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}
