// The paid request, Till beside the official middleware on the same facilitator.
// Payers (distinct keys, funded on the sandbox chain) pay (a) Till sessions over E3, a STATIC link
// and TRANSIENT sessions (one per proof), and (b) a route guarded by @x402/express
// (bench/servers/x402-express.ts) at the same price, through the same facilitator, with proofs made
// beforehand by the official x402 client (so signing is not measured) — each proof sent once.
// The sides are loaded in turn, in rounds (each round starting with the next side), `connections`
// at a time and one at a time. The facilitator is either the sandbox's (real verification and
// settlement on the sandbox chain, behind a front that times each call) or a stand-in of fixed
// latency (bench/servers/facilitator-front.ts: 5 ms verify, 10 ms settle, checks nothing), so the
// ratio shows the servers' own cost. Till on SQLite for all, and on PostgreSQL with the stand-in.
// Alone: npx node bench/paid.ts
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { Agent, setGlobalDispatcher } from 'undici';
import type { Address, LocalAccount } from 'viem';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort, sandboxOverHttp } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { createSession, fundedPayer, x402Url } from '../src/testing/shop.ts';
import type { PaidJob, PaidLoadResult } from './servers/paid-load.ts';
import {
  type BenchOptions,
  type BenchReport,
  type ChildServer,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  type Engine,
  failureWithOutput,
  fmt,
  mean,
  percentile,
  postgresUnreachable,
  runNode,
  serviceEnv,
  startServer,
} from './support.ts';

const THIS_FILE = fileURLToPath(import.meta.url);
const ROUNDS = 3;
const PAYERS = 40;
const PRICE_USD = 0.01;
const PRICE_UNITS = '10000';
const STAND_IN = { verifyMs: 5, settleMs: 10 };
const THROUGHPUT_TARGET = 1.0;
const ADDED_LATENCY_MARGIN_MS = 1;

type Facilitator = 'stand-in' | 'sandbox';
type Side = 'till-static' | 'till-transient' | 'express';
const SIDE_LABEL: Record<Side, string> = {
  'till-static': 'Till, STATIC link',
  'till-transient': 'Till, TRANSIENT sessions',
  express: '`@x402/express` route',
};
/** Requests per slice: the sandbox's facilitator settles about 100 a second, the stand-in several hundred. */
const SLICE: Record<Facilitator, { many: number; one: number; warmup: number }> = {
  'stand-in': { many: 1000, one: 150, warmup: 200 },
  sandbox: { many: 300, one: 60, warmup: 60 },
};

type Slice = PaidLoadResult & { verifyP50: number; settleP50: number; addedP50: number };
type Servers = { till: { base: string; apiKey: string; staticId: string }; expressUrl: string; frontUrl: string };
type Payer = { account: LocalAccount; client: x402HTTPClient };

function payerOf(account: LocalAccount, usdcAddress: Address): Payer {
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: usdcAddress }] },
  });
  return { account, client: new x402HTTPClient(client) };
}

/** The challenge at `url` as the official client reads it, and proofs for it made by the given payers. */
async function proofsFor(url: string, payers: Payer[]): Promise<Record<string, string>[]> {
  const response = await retriedOnce(`the challenge at ${url}`, () => fetch(url));
  const body = await response.json();
  if (response.status !== 402) throw new Error(`${url} answered the challenge with ${response.status}: ${JSON.stringify(body)}`);
  const required = payers[0]!.client.getPaymentRequiredResponse((name) => response.headers.get(name), body);
  return Promise.all(payers.map(async (payer) => payer.client.encodePaymentSignatureHeader(await payer.client.createPaymentPayload(required))));
}

/**
 * The bench's own requests between slices, tried again once when the connection they were sent on
 * was closed under them (a kept-alive connection closed by the server as it was reused).
 */
async function retriedOnce<T>(what: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return request().catch((again: Error) => {
      throw new Error(`${what}: ${again.message} (${(again.cause as Error | undefined)?.message ?? 'no cause'})`);
    });
  }
}

/** Runs `work` on each item, `width` at a time. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += width) {
    results.push(...(await Promise.all(items.slice(start, start + width).map((item, offset) => work(item, start + offset)))));
  }
  return results;
}

/** `count` requests for one side, each with its own proof, payers taken in turn. */
async function prepareRequests(side: Side, servers: Servers, payers: Payer[], count: number): Promise<PaidJob['requests']> {
  const payerAt = (i: number) => payers[i % payers.length]!;
  if (side === 'till-transient') {
    const indexes = Array.from({ length: count }, (_, i) => i);
    return inBatches(indexes, 10, async (i) => {
      const id = await retriedOnce('a new session', () =>
        createSession(servers.till.base, servers.till.apiKey, { amount: PRICE_USD, currency: 'USD', orderType: 'TRANSIENT', concept: 'Benchmark item' }),
      );
      const [headers] = await proofsFor(x402Url(servers.till.base, id), [payerAt(i)]);
      return { path: new URL(x402Url(servers.till.base, id)).pathname, headers: headers! };
    });
  }
  const url = side === 'express' ? servers.expressUrl : x402Url(servers.till.base, servers.till.staticId);
  const path = new URL(url).pathname;
  const headers = await proofsFor(
    url,
    Array.from({ length: count }, (_, i) => payerAt(i)),
  );
  return headers.map((h) => ({ path, headers: h }));
}

async function runSlice(origin: string, frontUrl: string, connections: number, requests: PaidJob['requests']): Promise<Slice> {
  const dir = mkdtempSync(join(tmpdir(), 'till-bench-paid-'));
  try {
    const file = join(dir, 'job.json');
    const job: PaidJob = { origin, connections, requests, expectedStatus: 200 };
    writeFileSync(file, JSON.stringify(job));
    await retriedOnce('the facilitator timings', () => fetch(`${frontUrl}/__timings`));
    const result = JSON.parse(await runNode(['bench/servers/paid-load.ts', file], childEnv({}))) as PaidLoadResult;
    const timings = (await (await retriedOnce('the facilitator timings', () => fetch(`${frontUrl}/__timings`))).json()) as {
      verify: number[];
      settle: number[];
    };
    const verifyP50 = percentile(timings.verify, 50);
    const settleP50 = percentile(timings.settle, 50);
    return { ...result, verifyP50, settleP50, addedP50: result.latencyP50 - verifyP50 - settleP50 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function startFront(facilitator: Facilitator, sandbox: SpawnedSandbox): Promise<{ server: ChildServer; url: string }> {
  const port = await freePort();
  const settings: Record<string, string> =
    facilitator === 'sandbox' ? { UPSTREAM: sandbox.facilitatorUrl } : { VERIFY_MS: String(STAND_IN.verifyMs), SETTLE_MS: String(STAND_IN.settleMs) };
  const url = `http://127.0.0.1:${port}`;
  return { server: await startServer(['bench/servers/facilitator-front.ts'], childEnv({ PORT: String(port), ...settings }), `${url}/__timings`), url };
}

async function startTill(engine: Engine, facilitator: Facilitator, sandbox: SpawnedSandbox, frontUrl: string, payTo: Address) {
  const storage = await createBenchStorage(engine, 'till-bench-paid-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serviceEnv(storage, port, sandbox, {
    TILL_FACILITATOR_URL: frontUrl,
    // The stand-in settles nothing on chain: the reconciler's follow-up of settled payments (after
    // its grace) would find none of them there. The grace is set past the bench's length.
    ...(facilitator === 'stand-in' ? { TILL_RECONCILE_GRACE_MS: '3600000' } : {}),
  });
  try {
    const { apiKey } = await createMerchantWithCli(env, payTo);
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    try {
      const staticId = await createSession(base, apiKey, { amount: PRICE_USD, currency: 'USD', orderType: 'STATIC', concept: 'Benchmark item' });
      return {
        till: { base, apiKey, staticId },
        stop: async () => {
          await server.stop();
          await storage.drop();
        },
        server,
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

async function startExpress(frontUrl: string, payTo: Address, usdcAddress: Address) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/item`;
  const env = childEnv({ PORT: String(port), FACILITATOR_URL: frontUrl, PAY_TO: payTo, USDC_ADDRESS: usdcAddress, PRICE_UNITS });
  return { server: await startServer(['bench/servers/x402-express.ts'], env, url), url };
}

type Measured = { side: Side; connections: number; slices: Slice[] };
type Setting = { engine: Engine; facilitator: Facilitator; sides: Side[]; measured: Measured[] };

/** Warm-up, then ROUNDS rounds: every side at `connections`, then one at a time, the first side changing each round. */
async function measureSetting(setting: Setting, sandbox: SpawnedSandbox, payers: Payer[], options: BenchOptions, log: (line: string) => void): Promise<void> {
  const payTo = newAccount().address;
  const front = await startFront(setting.facilitator, sandbox);
  try {
    const tillServer = await startTill(setting.engine, setting.facilitator, sandbox, front.url, payTo);
    try {
      const express = await startExpress(front.url, payTo, sandbox.usdcAddress as Address);
      try {
        const servers: Servers = { till: tillServer.till, expressUrl: express.url, frontUrl: front.url };
        const originOf = (side: Side) => (side === 'express' ? new URL(express.url).origin : tillServer.till.base);
        const sizes = SLICE[setting.facilitator];
        const slice = async (side: Side, connections: number, count: number) =>
          runSlice(originOf(side), front.url, connections, await prepareRequests(side, servers, payers, count));
        for (const side of setting.sides) await slice(side, options.connections, sizes.warmup);
        const measured = new Map<string, Measured>();
        const record = (side: Side, connections: number, result: Slice) => {
          const key = `${side}/${connections}`;
          if (!measured.has(key)) measured.set(key, { side, connections, slices: [] });
          measured.get(key)!.slices.push(result);
          const wrong = Object.entries(result.unexpected).map(([status, n]) => `${n}× ${status}`);
          log(
            `  ${setting.engine} ${setting.facilitator} ${side.padEnd(14)} c=${String(connections).padEnd(3)} ${fmt(result.requestsPerSecond).padStart(5)} paid/s  p50 ${fmt(result.latencyP50, 2)} ms  p99 ${fmt(result.latencyP99, 1)} ms  facilitator ${fmt(result.verifyP50 + result.settleP50, 2)} ms  added ${fmt(result.addedP50, 2)} ms${wrong.length ? `  NOT 200: ${wrong.join(', ')} (${result.firstUnexpected})` : ''}`,
          );
        };
        for (let round = 0; round < ROUNDS; round++) {
          const order = setting.sides.map((_, i) => setting.sides[(i + round) % setting.sides.length]!);
          for (const side of order) record(side, options.connections, await slice(side, options.connections, sizes.many));
          for (const side of order) record(side, 1, await slice(side, 1, sizes.one));
        }
        setting.measured = [...measured.values()];
      } catch (error) {
        throw failureWithOutput(error, express.server);
      } finally {
        await express.server.stop();
      }
    } catch (error) {
      throw failureWithOutput(error, tillServer.server);
    } finally {
      await tillServer.stop();
    }
  } finally {
    await front.server.stop();
  }
}

const slicesOf = (setting: Setting, side: Side, connections: number) =>
  setting.measured.find((m) => m.side === side && m.connections === connections)?.slices ?? [];

function settingTable(setting: Setting, connections: number): { markdown: string[]; verdicts: string[] } {
  const title = `${setting.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${setting.facilitator === 'sandbox' ? 'sandbox facilitator (settles on chain)' : `stand-in facilitator (${STAND_IN.verifyMs} ms verify, ${STAND_IN.settleMs} ms settle)`}`;
  const rows: string[] = [
    `| ${title} | at once | paid/s | p50 ms | p99 ms | facilitator verify + settle p50 ms | added p50 ms | paid/s ÷ express, by round |`,
    '|---|---:|---:|---:|---:|---:|---:|---|',
  ];
  const verdicts: string[] = [];
  for (const at of [connections, 1]) {
    const expressSlices = slicesOf(setting, 'express', at);
    for (const side of setting.sides) {
      const slices = slicesOf(setting, side, at);
      if (slices.length === 0) continue;
      const ratios = side === 'express' ? [] : slices.map((s, i) => s.requestsPerSecond / (expressSlices[i]?.requestsPerSecond ?? Number.NaN));
      const failures = slices.reduce((sum, s) => sum + Object.values(s.unexpected).reduce((a, b) => a + b, 0), 0);
      rows.push(
        `| ${SIDE_LABEL[side]}${failures ? ` (${failures} not 200)` : ''} | ${at} | ${fmt(mean(slices.map((s) => s.requestsPerSecond)))} | ${fmt(mean(slices.map((s) => s.latencyP50)), 2)} | ${fmt(mean(slices.map((s) => s.latencyP99)), 1)} | ${fmt(mean(slices.map((s) => s.verifyP50 + s.settleP50)), 2)} | ${fmt(mean(slices.map((s) => s.addedP50)), 2)} | ${ratios.map((r) => `${fmt(r, 2)}×`).join(', ')} |`,
      );
      if (side === 'express') continue;
      const added = mean(slices.map((s) => s.addedP50));
      const expressAdded = mean(expressSlices.map((s) => s.addedP50));
      const latencyMet = added <= expressAdded + ADDED_LATENCY_MARGIN_MS;
      const where = `${setting.engine} ${setting.facilitator} ${side} ${at} at once`;
      verdicts.push(
        `${where}: adds ${fmt(added, 2)} ms at p50 against the middleware's ${fmt(expressAdded, 2)} ms (target ≤ +${ADDED_LATENCY_MARGIN_MS} ms: ${latencyMet ? 'met' : 'MISSED'})`,
      );
      if (at !== 1) {
        const lowest = Math.min(...ratios);
        verdicts.push(
          `${where}: ${fmt(mean(ratios), 2)}× the middleware's paid/s, lowest round ${fmt(lowest, 2)}× (target ≥ ${fmt(THROUGHPUT_TARGET, 1)}×: ${mean(ratios) >= THROUGHPUT_TARGET ? 'met' : 'MISSED'})`,
        );
      }
    }
  }
  return { markdown: rows, verdicts };
}

/**
 * The bench's own requests (challenges, new sessions, timings) between slices: a connection idle for
 * half a second is closed here first, so none is reused as a server closes it (Node's http server,
 * under @x402/express, closes idle ones after 5 s; a loaded machine's timers fire late).
 */
setGlobalDispatcher(new Agent({ keepAliveTimeout: 500, keepAliveMaxTimeout: 500 }));

export async function run(
  options: BenchOptions = { durationSeconds: 10, connections: 10 },
  log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<BenchReport & Record<string, unknown>> {
  const sandbox = await spawnSandbox();
  try {
    const faucet = sandboxOverHttp(sandbox);
    const payers: Payer[] = [];
    for (let i = 0; i < PAYERS; i++) payers.push(payerOf(await fundedPayer(faucet, '20'), sandbox.usdcAddress as Address));
    const postgresSkip = await postgresUnreachable('postgres');
    const settings: Setting[] = [
      { engine: 'sqlite', facilitator: 'stand-in', sides: ['till-static', 'till-transient', 'express'], measured: [] },
      ...(postgresSkip ? [] : [{ engine: 'postgres' as const, facilitator: 'stand-in' as const, sides: ['till-static', 'express'] as Side[], measured: [] }]),
      { engine: 'sqlite', facilitator: 'sandbox', sides: ['till-static', 'till-transient', 'express'], measured: [] },
    ];
    for (const setting of settings) await measureSetting(setting, sandbox, payers, options, log);
    const tables = settings.map((setting) => settingTable(setting, options.connections));
    const summary = tables.flatMap((t) => t.verdicts.map((v) => `paid: ${v}`)).join('\n');
    const markdown = [
      `Measured ${new Date().toISOString().slice(0, 10)}: ${PAYERS} payers, proofs made beforehand by the official x402 client and each sent once; ${ROUNDS} rounds, each loading every side in turn (the first side changing each round) with ${SLICE['stand-in'].many} requests (${SLICE.sandbox.many} on the sandbox facilitator) ${options.connections} at a time, then ${SLICE['stand-in'].one} (${SLICE.sandbox.one}) one at a time; after a warm-up of each side. Latencies at the client; the facilitator's time measured at the facilitator; added = p50 − (verify p50 + settle p50). Means over the rounds.${postgresSkip ? ` PostgreSQL skipped: ${postgresSkip}.` : ''}`,
      '',
      ...tables.flatMap((t) => [...t.markdown, '']),
      ...tables.flatMap((t) => t.verdicts.map((v) => `- ${v}`)),
    ].join('\n');
    return { name: 'paid', summary, markdown, settings };
  } finally {
    await sandbox.stop();
  }
}

if (process.argv[1] === THIS_FILE) {
  const report = await run();
  process.stdout.write(`\n${report.summary}\n\n${report.markdown}\n`);
}
