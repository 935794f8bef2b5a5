// The service's resident memory under a long run of mixed traffic: `till serve` (SQLite, paying
// through a spawned sandbox) gets --requests requests (1,000,000 unless given) of E1, the session
// read, the x402 challenge, the E4 receipt and /healthz, taken in turn, from 127.0.0.1. Its RSS
// (VmRSS of the child process) is read after the first 10,000 and after each tenth of the rest,
// each time after a short pause so that no request is in flight, with the V8 heap in use from /metrics. Target: RSS at the end within 10 %
// of RSS after the first 10,000 (no growth).
import { readFileSync } from 'node:fs';
import type { Address } from 'viem';
import { spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort, sandboxSettings } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { apiHeaders, SESSIONS_PATH } from '../src/testing/shop.ts';
import {
  type BenchOptions,
  type BenchReport,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  failureWithOutput,
  fillSessionsAndOrders,
  fmt,
  type MixedKind,
  publicOrderId,
  runMixedLoad,
  sessionId,
  startServer,
} from './support.ts';

const REQUESTS = 1_000_000;
const FIRST = 10_000;
const SAMPLES = 10;
/** Sessions and orders in the database before the run; the reads rotate over all of them. */
const ROWS = 10_000;
const TARGET = 0.1;
const PAUSE_MS = 1_000;

const rssBytes = (pid: number) => {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
};
const mb = (bytes: number) => fmt(bytes / 1024 / 1024, 1);
/** The V8 heap in use, from the service's own /metrics: beside RSS it tells a leak from memory the allocator keeps. */
async function heapUsed(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^till_nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const total = Math.max(options.requests ?? REQUESTS, 2 * FIRST);
  const sandbox = await spawnSandbox();
  const storage = await createBenchStorage('sqlite', 'till-bench-memory-');
  try {
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
    const { merchantId, apiKey } = await createMerchantWithCli(env, newAccount().address as Address);
    await fillSessionsAndOrders('sqlite', storage.settings.TILL_DATABASE_URL, merchantId, ROWS);
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    try {
      const every = Array.from({ length: ROWS }, (_, i) => i);
      const kinds: MixedKind[] = [
        {
          method: 'POST',
          paths: [SESSIONS_PATH],
          headers: apiHeaders(apiKey),
          body: JSON.stringify({ amount: 12.5, currency: 'EUR', orderId: 'memory-[<id>]', concept: 'Benchmark order' }),
          expectedStatus: 201,
        },
        { method: 'GET', paths: every.map((i) => `${SESSIONS_PATH}/${sessionId(i)}`), headers: apiHeaders(apiKey), expectedStatus: 200 },
        { method: 'GET', paths: every.map((i) => `/x402/session/${sessionId(i)}`), headers: {}, expectedStatus: 402 },
        { method: 'GET', paths: every.map((i) => `/checkout/v2/orders/receipt/${publicOrderId(i)}`), headers: {}, expectedStatus: 200 },
        { method: 'GET', paths: ['/healthz'], headers: {}, expectedStatus: 200 },
      ];
      const samples: { requests: number; rss: number; heap: number; requestsPerSecond: number; failures: number }[] = [];
      let done = 0;
      const step = Math.ceil((total - FIRST) / SAMPLES);
      while (done < total) {
        const amount = done === 0 ? FIRST : Math.min(step, total - done);
        const started = performance.now();
        const result = await runMixedLoad({ origin: base, kinds, connections: options.connections, amount });
        const requestsPerSecond = amount / ((performance.now() - started) / 1000);
        done += amount;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        const sample = { requests: done, rss: rssBytes(server.process.pid!), heap: await heapUsed(base), requestsPerSecond, failures: result.failures };
        samples.push(sample);
        log(
          `  after ${String(done).padStart(8)} requests  RSS ${mb(sample.rss).padStart(6)} MB  heap used ${mb(sample.heap).padStart(6)} MB  ${fmt(requestsPerSecond).padStart(5)} req/s${result.failures ? `  ${result.failures} FAILED` : ''}`,
        );
      }
      const first = samples[0]!;
      const last = samples.at(-1)!;
      const peak = Math.max(...samples.map((s) => s.rss));
      const ratio = last.rss / first.rss;
      const failures = samples.reduce((sum, s) => sum + s.failures, 0);
      const verdict = Math.abs(ratio - 1) <= TARGET ? `within the ${TARGET * 100} % target` : `OUTSIDE the ${TARGET * 100} % target`;
      const markdown = [
        `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine: \`till serve\` on SQLite with ${ROWS.toLocaleString('en')} sessions and orders filled beforehand, ${total.toLocaleString('en')} requests from ${options.connections} connections, taking in turn E1, the session read, the x402 challenge, the E4 receipt and \`/healthz\` (reads over all ${ROWS.toLocaleString('en')} rows); RSS is the child's VmRSS, read ${PAUSE_MS / 1000} s after each batch.${failures ? ` ${failures} answers were not the expected status.` : ''}`,
        '',
        '| Requests served | RSS MB | V8 heap used MB | req/s of the batch |',
        '|---:|---:|---:|---:|',
        ...samples.map((s) => `| ${s.requests.toLocaleString('en')} | ${mb(s.rss)} | ${mb(s.heap)} | ${fmt(s.requestsPerSecond)} |`),
        '',
        `RSS after ${total.toLocaleString('en')} requests / after the first ${FIRST.toLocaleString('en')}: **${fmt(ratio, 3)}** (${mb(last.rss)} MB / ${mb(first.rss)} MB; peak ${mb(peak)} MB; target within ±${TARGET * 100} %).`,
      ].join('\n');
      return {
        name: 'memory',
        summary: `memory: RSS ${mb(first.rss)} MB after ${FIRST} requests, ${mb(last.rss)} MB after ${total} → ${fmt(ratio, 3)} (${verdict}); peak ${mb(peak)} MB${failures ? `; ${failures} unexpected answers` : ''}`,
        markdown,
      };
    } catch (error) {
      throw failureWithOutput(error, server);
    } finally {
      await server.stop();
    }
  } finally {
    await storage.drop();
    await sandbox.stop();
  }
}
