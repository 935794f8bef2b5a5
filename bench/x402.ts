// x402 on the sandbox chain and facilitator (spawned as `till sandbox` is):
// (a) throughput of the 402 challenge, Till (`till serve`, SQLite) beside @x402/express serving
//     one static-price route and beside two ceilings, bare node:http servers sending a pre-built
//     402: Till's own (status, headers and body as Till sent them), and the spec's body alone (with
//     only `content-type: application/json`), each in a child process of its own, loaded in turn in
//     2 s slices in each of three rounds. (The paid request is bench/paid.ts.)
// `npx node bench/x402.ts` runs it on its own; `npm run bench -- x402` runs it with the others.
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { createSession, x402Url } from '../src/testing/shop.ts';
import {
  averageLoad,
  type BenchOptions,
  type BenchReport,
  type ChildServer,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  failureWithOutput,
  fmt,
  type LoadResult,
  runLoad,
  serviceEnv,
  startServer,
} from './support.ts';

const THIS_FILE = fileURLToPath(import.meta.url);
const SERVE_CEILING = '--serve-ceiling';

const ROUNDS = 3;
const WARMUP_SECONDS = 2;
const SLICE_SECONDS = 2;
/** Till / @x402/express that each round must reach. */
const THROUGHPUT_TARGET = 2;
/** Till / the ceiling sending Till's exact answer, that each round must reach. */
const CEILING_TARGET = 0.8;
const PRICE_USD = '0.01';
const PRICE_UNITS = 10_000n;

/** A run of challenges, every answer of which should be a 402. */
const challengeLoad = (url: string, options: BenchOptions) => runLoad({ url, method: 'GET', headers: {} }, options, 402);

type Till = { server: ChildServer; base: string; apiKey: string; sessionId: string; stop(): Promise<void> };

/** `till serve` on a fresh SQLite database, paying through the spawned sandbox; a STATIC session of PRICE_USD. */
async function startTill(sandbox: SpawnedSandbox, merchantWallet: Address): Promise<Till> {
  const storage = await createBenchStorage('sqlite', 'till-bench-x402-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serviceEnv(storage, port, sandbox);
  try {
    const { apiKey } = await createMerchantWithCli(env, merchantWallet);
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    let sessionId: string;
    try {
      sessionId = await createSession(base, apiKey, { amount: Number(PRICE_USD), currency: 'USD', orderType: 'STATIC', concept: 'Benchmark item' });
    } catch (error) {
      await server.stop();
      throw failureWithOutput(error, server);
    }
    return {
      server,
      base,
      apiKey,
      sessionId,
      stop: async () => {
        await server.stop();
        await storage.drop();
      },
    };
  } catch (error) {
    await storage.drop();
    throw error;
  }
}

async function startExpress(sandbox: SpawnedSandbox, merchantWallet: Address): Promise<{ server: ChildServer; url: string }> {
  const port = await freePort();
  const env = childEnv({
    PORT: String(port),
    FACILITATOR_URL: sandbox.facilitatorUrl,
    PAY_TO: merchantWallet,
    USDC_ADDRESS: sandbox.usdcAddress,
    PRICE_UNITS: PRICE_UNITS.toString(),
  });
  const url = `http://127.0.0.1:${port}/item`;
  return { server: await startServer(['bench/servers/x402-express.ts'], env, url), url };
}

/** A ceiling: node:http sending one pre-built 402 (Till's as read from it, or the spec's body alone) to every request, nothing else. */
async function serveCeiling(): Promise<void> {
  const { createServer } = await import('node:http');
  const answer = JSON.parse(process.env.ANSWER!) as { headers: Record<string, string>; body: string };
  const body = Buffer.from(answer.body);
  const headers = { ...answer.headers, 'content-length': String(body.length) };
  createServer((_request, response) => void response.writeHead(402, headers).end(body)).listen(Number(process.env.PORT), '127.0.0.1');
}

/** Till's challenge as sent (its request id included, as a fixed header), less the headers node:http adds itself. */
async function tillAnswer(url: string): Promise<{ headers: Record<string, string>; body: string }> {
  const response = await fetch(url);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)) headers[name] = value;
  });
  return { headers, body: await response.text() };
}

/** A ceiling's answer: Till's exactly, or the spec's body alone (Till's body) with only its content type. */
async function startCeiling(tillUrl: string, answer: 'exact' | 'spec'): Promise<{ server: ChildServer; url: string }> {
  const port = await freePort();
  const till = await tillAnswer(tillUrl);
  const sent = answer === 'exact' ? till : { headers: { 'content-type': 'application/json' }, body: till.body };
  const env = childEnv({ PORT: String(port), ANSWER: JSON.stringify(sent) });
  const url = `http://127.0.0.1:${port}/x402/session/ceiling`;
  return { server: await startServer([THIS_FILE, SERVE_CEILING], env, url), url };
}

const TARGETS = ['till', 'express', 'ceiling', 'spec'] as const;
type Target = (typeof TARGETS)[number];
type Round = Record<Target, LoadResult> & { ratio: number; ceilingShare: number; specShare: number };

/**
 * Three rounds; in each, the four servers are loaded in turn in SLICE_SECONDS slices (the order
 * rotating from one slice to the next) until each has had the round's duration, so a machine whose
 * load drifts weighs on all alike. Each round gives its own ratios; the verdicts take the lowest.
 */
async function measureThroughput(sandbox: SpawnedSandbox, till: Till, merchantWallet: Address, options: BenchOptions, log: (line: string) => void) {
  const express = await startExpress(sandbox, merchantWallet);
  const tillUrl = x402Url(till.base, till.sessionId);
  const ceiling = await startCeiling(tillUrl, 'exact');
  const spec = await startCeiling(tillUrl, 'spec');
  const urls: Record<Target, string> = { till: tillUrl, express: express.url, ceiling: ceiling.url, spec: spec.url };
  const rounds: Round[] = [];
  try {
    for (const name of TARGETS) {
      const probe = await fetch(urls[name]);
      if (probe.status !== 402) throw new Error(`${name} answered the challenge probe with ${probe.status}: ${await probe.text()}`);
      await challengeLoad(urls[name], { ...options, durationSeconds: WARMUP_SECONDS });
    }
    const slices = Math.max(1, Math.round(options.durationSeconds / SLICE_SECONDS));
    for (let round = 0; round < ROUNDS; round++) {
      const results: Record<Target, LoadResult[]> = { till: [], express: [], ceiling: [], spec: [] };
      for (let slice = 0; slice < slices; slice++) {
        const shift = slice % TARGETS.length;
        for (const name of [...TARGETS.slice(shift), ...TARGETS.slice(0, shift)]) {
          results[name].push(await challengeLoad(urls[name], { ...options, durationSeconds: options.durationSeconds / slices }));
        }
      }
      const loads = Object.fromEntries(TARGETS.map((name) => [name, averageLoad(results[name])])) as Record<Target, LoadResult>;
      const rps = (name: Target) => loads[name].requestsPerSecond;
      rounds.push({ ...loads, ratio: rps('till') / rps('express'), ceilingShare: rps('till') / rps('ceiling'), specShare: rps('till') / rps('spec') });
      for (const name of TARGETS) {
        const result = loads[name];
        log(
          `  402 challenge  round ${round + 1} ${name.padEnd(7)} ${fmt(result.requestsPerSecond).padStart(6)} req/s  p50 ${fmt(result.latencyP50, 1)} ms  p99 ${fmt(result.latencyP99, 1)} ms${result.failures ? `  ${result.failures} NOT 402` : ''}`,
        );
      }
      const last = rounds.at(-1)!;
      log(
        `  402 challenge  round ${round + 1}: Till / @x402/express ${fmt(last.ratio, 2)}×, Till / exact ceiling ${fmt(last.ceilingShare, 2)}, Till / spec-body ceiling ${fmt(last.specShare, 2)}`,
      );
    }
  } finally {
    await express.server.stop();
    await ceiling.server.stop();
    await spec.server.stop();
  }
  const meanOf = (name: Target) => averageLoad(rounds.map((round) => round[name]));
  const lowest = (ratio: (round: Round) => number) => Math.min(...rounds.map(ratio));
  return {
    rounds,
    till: meanOf('till'),
    express: meanOf('express'),
    ceiling: meanOf('ceiling'),
    spec: meanOf('spec'),
    ratio: lowest((round) => round.ratio),
    ceilingShare: lowest((round) => round.ceilingShare),
    specShare: lowest((round) => round.specShare),
  };
}

export async function run(
  options: BenchOptions = { durationSeconds: 10, connections: 10 },
  log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<BenchReport & Record<string, unknown>> {
  const sandbox = await spawnSandbox();
  const merchantWallet = newAccount().address;
  try {
    const till = await startTill(sandbox, merchantWallet);
    try {
      const throughput = await measureThroughput(sandbox, till, merchantWallet, options, log);
      const meetsThroughput = throughput.ratio >= THROUGHPUT_TARGET;
      const meetsCeiling = throughput.ceilingShare >= CEILING_TARGET;
      const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
      const failures = TARGETS.reduce((sum, name) => sum + throughput[name].failures, 0);
      const summary = [
        `x402: challenge Till / @x402/express per round ${throughput.rounds.map((round) => `${fmt(round.ratio, 2)}×`).join(', ')}; lowest ${fmt(throughput.ratio, 2)}× (target ≥ ${THROUGHPUT_TARGET}× each round: ${verdict(meetsThroughput)})`,
        `x402: challenge Till / exact node:http ceiling per round ${throughput.rounds.map((round) => fmt(round.ceilingShare, 2)).join(', ')}; lowest ${fmt(throughput.ceilingShare, 2)} (target ≥ ${CEILING_TARGET} each round: ${verdict(meetsCeiling)}); Till / spec-body ceiling per round ${throughput.rounds.map((round) => fmt(round.specShare, 2)).join(', ')}`,
      ].join('\n');
      const row = (label: string, result: LoadResult, ratio = '', share = '', specShare = '') =>
        `| ${label} | ${fmt(result.requestsPerSecond)} | ${fmt(result.latencyP50, 1)} ms | ${fmt(result.latencyP99, 1)} ms | ${ratio} | ${share} | ${specShare} |`;
      const markdown = [
        `Measured ${new Date().toISOString().slice(0, 10)}: 402 challenge, ${options.connections} connections, ${ROUNDS} rounds of ${options.durationSeconds} s per server after a ${WARMUP_SECONDS} s warm-up, the four servers loaded in turn in ${SLICE_SECONDS} s slices. Ceiling: bare \`node:http\` sending Till's 402 pre-built (status, headers, body); spec body: bare \`node:http\` sending the same JSON body with only \`content-type: application/json\`.`,
        '',
        '| Server | req/s | p50 | p99 | Till / Express | Till / ceiling | Till / spec body |',
        '|---|---:|---:|---:|---:|---:|---:|',
        ...throughput.rounds.flatMap((round, index) => [
          row(
            `round ${index + 1}: Till \`GET /x402/session/{id}\` (SQLite)`,
            round.till,
            `**${fmt(round.ratio, 2)}×**`,
            `**${fmt(round.ceilingShare, 2)}**`,
            fmt(round.specShare, 2),
          ),
          row(`round ${index + 1}: \`@x402/express\` static-price route`, round.express),
          row(`round ${index + 1}: ceiling, Till's 402 pre-built`, round.ceiling),
          row(`round ${index + 1}: spec body alone`, round.spec),
        ]),
        row('mean: Till', throughput.till),
        row('mean: `@x402/express`', throughput.express),
        row("mean: ceiling, Till's 402 pre-built", throughput.ceiling),
        row('mean: spec body alone', throughput.spec),
        '',
        `Lowest round: Till / @x402/express **${fmt(throughput.ratio, 2)}×** (target ≥ ${THROUGHPUT_TARGET}× in each round: ${verdict(meetsThroughput)}); Till / ceiling **${fmt(throughput.ceilingShare, 2)}** (target ≥ ${CEILING_TARGET} in each round: ${verdict(meetsCeiling)}); Till / spec body ${fmt(throughput.specShare, 2)}${failures ? `; ${failures} answers were not 402` : ''}.`,
      ].join('\n');
      return { name: 'x402', summary, markdown, throughput };
    } finally {
      await till.stop();
    }
  } finally {
    await sandbox.stop();
  }
}

if (process.argv[1] === THIS_FILE) {
  if (process.argv[2] === SERVE_CEILING) await serveCeiling();
  else {
    const report = await run();
    process.stdout.write(`\n${report.summary}\n\n${report.markdown}\n`);
  }
}
