// The service's resident memory under a long run of mixed traffic: `till serve` (SQLite, paying
// through a spawned sandbox) gets --requests requests (1,000,000 unless given) of E1, the session
// read, the x402 challenge, the E4 receipt and /healthz, taken in turn, from 127.0.0.1. The first
// tenth is a warm-up; after it and after each further tenth, each time after a short pause so that
// no request is in flight, the child's VmRSS, RssAnon and RssFile (/proc/PID/status) are read, with
// the V8 heap in use from its /metrics. Target: RSS at the end at most 10 % above RSS at the end of
// the warm-up (no growth).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { SERVE_HEAP_FLAGS } from '../bin/serve-flags.mjs';
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
/** The warm-up is the first of this many equal parts of the run; each further part is one sample. */
const PARTS = 10;
/** Sessions and orders in the database before the run; the reads rotate over all of them. */
const ROWS = 10_000;
const TARGET = 0.1;
const PAUSE_MS = 1_000;
/** Heap snapshots are taken after these many requests, and their objects compared by constructor. */
const SNAPSHOT_AT = [200_000, 1_000_000];

/** A heap snapshot's live objects: count and self size by constructor name (or node type). */
type HeapCensus = Map<string, { count: number; bytes: number }>;

/** Asks the child for a heap snapshot (SIGUSR2, --heapsnapshot-signal), waits for its file, and counts its objects. */
async function heapCensus(pid: number, dir: string): Promise<HeapCensus> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  let file: string | undefined;
  for (let size = -1; ; ) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    file ??= readdirSync(dir).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'));
    if (!file) continue;
    const text = readFileSync(join(dir, file), 'utf8');
    if (text.length === size && text.endsWith('}')) break;
    size = text.length;
  }
  const snapshot = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  rmSync(join(dir, file));
  const fields = snapshot.snapshot.meta.node_fields;
  const [typeAt, nameAt, sizeAt] = [fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')];
  const types = snapshot.snapshot.meta.node_types[0];
  const census: HeapCensus = new Map();
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const type = types[snapshot.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' ? `${snapshot.strings[snapshot.nodes[i + nameAt]!]} (${type})` : `(${type})`;
    const entry = census.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += snapshot.nodes[i + sizeAt]!;
    census.set(key, entry);
  }
  return census;
}

type Resident = { rss: number; anon: number; file: number };
/** VmRSS and its parts that can move apart: anonymous memory (heaps, SQLite's page cache) and file-backed pages (code, mmap). */
const residentBytes = (pid: number): Resident => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (!match) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(match[1]) * 1024;
  };
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
};
const mb = (bytes: number) => fmt(bytes / 1024 / 1024, 1);
/**
 * From the service's own /metrics: the V8 heap in use, which beside RSS tells a leak from memory the
 * allocator keeps, and the size of V8's young generation, which V8 grows under load (by doubling,
 * up to a bound set by the heap's limit) and which counts in RssAnon whole.
 */
async function heapOf(base: string): Promise<{ heap: number; young: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
  return {
    heap: value(/^till_nodejs_heap_size_used_bytes (\S+)$/m),
    young: value(/^till_nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m),
  };
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const total = Math.max(options.requests ?? REQUESTS, 10 * PARTS);
  const warmUp = Math.ceil(total / PARTS);
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
    // Started as the launcher starts it (bin/till.mjs, `npm start`): with V8's heap bounds.
    const snapshots = mkdtempSync(join(tmpdir(), 'till-bench-heap-'));
    const server = await startServer(
      [...SERVE_HEAP_FLAGS, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`, 'src/cli/main.ts', 'serve'],
      env,
      `${base}/healthz`,
    );
    const censuses: { requests: number; census: HeapCensus }[] = [];
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
      const samples: (Resident & { requests: number; heap: number; young: number; requestsPerSecond: number; failures: number })[] = [];
      let done = 0;
      const step = Math.ceil((total - warmUp) / (PARTS - 1));
      while (done < total) {
        const amount = done === 0 ? warmUp : Math.min(step, total - done);
        const started = performance.now();
        const result = await runMixedLoad({ origin: base, kinds, connections: options.connections, amount });
        const requestsPerSecond = amount / ((performance.now() - started) / 1000);
        done += amount;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        const sample = { requests: done, ...residentBytes(server.process.pid!), ...(await heapOf(base)), requestsPerSecond, failures: result.failures };
        samples.push(sample);
        if (SNAPSHOT_AT.includes(done)) censuses.push({ requests: done, census: await heapCensus(server.process.pid!, snapshots) });
        log(
          `  after ${String(done).padStart(8)} requests${done === warmUp ? ' (warm-up)' : '          '}  RSS ${mb(sample.rss).padStart(6)} MB  anon ${mb(sample.anon).padStart(6)} MB  file ${mb(sample.file).padStart(6)} MB  heap used ${mb(sample.heap).padStart(6)} MB  young ${mb(sample.young).padStart(6)} MB  ${fmt(requestsPerSecond).padStart(5)} req/s${result.failures ? `  ${result.failures} FAILED` : ''}`,
        );
      }
      const first = samples[0]!;
      const last = samples.at(-1)!;
      const peak = Math.max(...samples.map((s) => s.rss));
      const ratio = last.rss / first.rss;
      const growth = (key: keyof Resident | 'heap' | 'young') => `${last[key] >= first[key] ? '+' : ''}${mb(last[key] - first[key])} MB`;
      const failures = samples.reduce((sum, s) => sum + s.failures, 0);
      const verdict = ratio <= 1 + TARGET ? `within the ${TARGET * 100} % target` : `OUTSIDE the ${TARGET * 100} % target`;
      const retention: string[] = [];
      if (censuses.length === 2) {
        const [early, late] = censuses as [(typeof censuses)[0], (typeof censuses)[0]];
        const total = (census: HeapCensus) => [...census.values()].reduce((sum, e) => sum + e.bytes, 0);
        const grown = [...late.census]
          .map(([name, e]) => ({ name, count: e.count - (early.census.get(name)?.count ?? 0), bytes: e.bytes - (early.census.get(name)?.bytes ?? 0) }))
          .sort((a, b) => b.bytes - a.bytes)
          .slice(0, 8);
        retention.push(
          '',
          `Heap snapshots (live objects only: a snapshot collects first) after ${early.requests.toLocaleString('en')} and ${late.requests.toLocaleString('en')} requests: ${mb(total(early.census))} MB and ${mb(total(late.census))} MB. What grew most between them, by constructor:`,
          '',
          '| Objects | Count change | Size change MB |',
          '|---|---:|---:|',
          ...grown.map((g) => `| \`${g.name}\` | ${g.count >= 0 ? '+' : ''}${g.count.toLocaleString('en')} | ${g.bytes >= 0 ? '+' : ''}${mb(g.bytes)} |`),
        );
      }
      const markdown = [
        `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine: \`till serve\` on SQLite with ${ROWS.toLocaleString('en')} sessions and orders filled beforehand, ${total.toLocaleString('en')} requests from ${options.connections} connections, taking in turn E1, the session read, the x402 challenge, the E4 receipt and \`/healthz\` (reads over all ${ROWS.toLocaleString('en')} rows); the first ${warmUp.toLocaleString('en')} are the warm-up. RSS is the child's VmRSS, with its anonymous (RssAnon) and file-backed (RssFile) parts from \`/proc/PID/status\`, read ${PAUSE_MS / 1000} s after each batch; the V8 heap in use and the size of V8's young generation (new space) are from its \`/metrics\`.${failures ? ` ${failures} answers were not the expected status.` : ''}`,
        '',
        '| Requests served | RSS MB | RssAnon MB | RssFile MB | V8 heap used MB | V8 young generation MB | req/s of the batch |',
        '|---:|---:|---:|---:|---:|---:|---:|',
        ...samples.map(
          (s) =>
            `| ${s.requests.toLocaleString('en')}${s === first ? ' (end of warm-up)' : ''} | ${mb(s.rss)} | ${mb(s.anon)} | ${mb(s.file)} | ${mb(s.heap)} | ${mb(s.young)} | ${fmt(s.requestsPerSecond)} |`,
        ),
        '',
        `The service runs with the launcher's heap bounds: \`${SERVE_HEAP_FLAGS.join(' ')}\`.`,
        '',
        `RSS after ${total.toLocaleString('en')} requests / at the end of the warm-up (${warmUp.toLocaleString('en')}): **${fmt(ratio, 3)}** (${mb(last.rss)} MB / ${mb(first.rss)} MB; peak ${mb(peak)} MB; target ≤ ${fmt(1 + TARGET, 2)}). Over the same span: RssAnon ${growth('anon')}, RssFile ${growth('file')}, V8 heap used ${growth('heap')}, V8 young generation ${growth('young')}.`,
        ...retention,
      ].join('\n');
      return {
        name: 'memory',
        summary: `memory: RSS ${mb(first.rss)} MB after the ${warmUp}-request warm-up, ${mb(last.rss)} MB after ${total} → ${fmt(ratio, 3)} (${verdict}); RssAnon ${growth('anon')}, RssFile ${growth('file')}, heap used ${growth('heap')}, young generation ${growth('young')}; peak ${mb(peak)} MB${failures ? `; ${failures} unexpected answers` : ''}`,
        markdown,
      };
    } catch (error) {
      throw failureWithOutput(error, server);
    } finally {
      await server.stop();
      rmSync(snapshots, { recursive: true, force: true });
    }
  } finally {
    await storage.drop();
    await sandbox.stop();
  }
}
