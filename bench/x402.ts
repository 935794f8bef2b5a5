// x402 on the sandbox chain and facilitator (spawned as `till sandbox` is):
// (a) throughput of the 402 challenge, Till (`till serve`, SQLite) beside @x402/express serving
//     one static-price route and beside the ceiling, a bare node:http server sending Till's own
//     402 pre-built (status, headers and body as Till sent them), each in a child process of its own;
// (b) the latency a paid request adds on top of the facilitator's verify + settle, read from
//     Till's /metrics over 500 paid requests.
// `npx node bench/x402.ts` runs it on its own; `npm run bench -- x402` runs it with the others.
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import { type SpawnedSandbox, spawnSandbox } from '../src/sandbox/spawn.ts';
import { freePort, sandboxOverHttp, sandboxSettings } from '../src/testing/environment.ts';
import { newAccount, nowSeconds } from '../src/testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment, x402Url } from '../src/testing/shop.ts';
import {
  type BenchOptions,
  type BenchReport,
  type ChildServer,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  failureWithOutput,
  fmt,
  type LoadResult,
  mean,
  runLoad,
  startServer,
} from './support.ts';

const THIS_FILE = fileURLToPath(import.meta.url);
const SERVE_EXPRESS = '--serve-express';
const SERVE_CEILING = '--serve-ceiling';

const ROUNDS = 3;
const WARMUP_SECONDS = 2;
const THROUGHPUT_TARGET = 1.5;
const PAID_REQUESTS = 500;
const PAYERS = 10;
const ADDED_LATENCY_TARGET_MS = 5;
const PRICE_USD = '0.01';
const PRICE_UNITS = 10_000n;
// The longest validity Till accepts, less a margin: sandbox blocks are mined far faster than one a second.
const VALIDITY_S = 590n;
const X402_ROUTE = '/x402/session/:sessionId';

/** A run of challenges, every answer of which should be a 402. */
const challengeLoad = (url: string, options: BenchOptions) => runLoad({ url, method: 'GET', headers: {} }, options, 402);

type Till = { server: ChildServer; base: string; apiKey: string; sessionId: string; stop(): Promise<void> };

/** `till serve` on a fresh SQLite database, paying through the spawned sandbox; a STATIC session of PRICE_USD. */
async function startTill(sandbox: SpawnedSandbox, merchantWallet: Address): Promise<Till> {
  const storage = await createBenchStorage('sqlite', 'till-bench-x402-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({
    ...storage.settings,
    TILL_BASE_URL: base,
    PORT: String(port),
    TILL_LOG_LEVEL: 'warn',
    TILL_NO_SANDBOX: 'true',
    ...sandboxSettings(sandbox),
    TILL_X402_PROOFS_PER_MINUTE_PER_IP: '100000',
    TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '100000',
  });
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

/** The comparison server: @x402/express guarding one static-price route, nothing else. */
async function serveExpress(): Promise<void> {
  const express = (await import('express')).default;
  const { paymentMiddleware, x402ResourceServer } = await import('@x402/express');
  const { HTTPFacilitatorClient } = await import('@x402/core/server');
  const { ExactEvmScheme } = await import('@x402/evm/exact/server');
  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: process.env.FACILITATOR_URL! })).register('eip155:8453', new ExactEvmScheme());
  const app = express();
  app.use(
    paymentMiddleware(
      {
        'GET /item': {
          accepts: {
            scheme: 'exact',
            network: 'eip155:8453',
            payTo: process.env.PAY_TO!,
            price: { amount: PRICE_UNITS.toString(), asset: process.env.USDC_ADDRESS!, extra: { name: 'USD Coin', version: '2' } },
            maxTimeoutSeconds: 60,
          },
          description: 'Benchmark item',
          mimeType: 'application/json',
        },
      },
      resourceServer,
    ),
  );
  app.get('/item', (_request, response) => void response.json({ item: 'paid' }));
  app.listen(Number(process.env.PORT), '127.0.0.1');
}

async function startExpress(sandbox: SpawnedSandbox, merchantWallet: Address): Promise<{ server: ChildServer; url: string }> {
  const port = await freePort();
  const env = childEnv({ PORT: String(port), FACILITATOR_URL: sandbox.facilitatorUrl, PAY_TO: merchantWallet, USDC_ADDRESS: sandbox.usdcAddress });
  const url = `http://127.0.0.1:${port}/item`;
  return { server: await startServer([THIS_FILE, SERVE_EXPRESS], env, url), url };
}

/** The ceiling: node:http sending one pre-built 402 (Till's, as read from it) to every request, nothing else. */
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

async function startCeiling(tillUrl: string): Promise<{ server: ChildServer; url: string }> {
  const port = await freePort();
  const env = childEnv({ PORT: String(port), ANSWER: JSON.stringify(await tillAnswer(tillUrl)) });
  const url = `http://127.0.0.1:${port}/x402/session/ceiling`;
  return { server: await startServer([THIS_FILE, SERVE_CEILING], env, url), url };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

async function measureThroughput(sandbox: SpawnedSandbox, till: Till, merchantWallet: Address, options: BenchOptions, log: (line: string) => void) {
  const express = await startExpress(sandbox, merchantWallet);
  const tillUrl = x402Url(till.base, till.sessionId);
  const ceiling = await startCeiling(tillUrl);
  const targets = { till: tillUrl, express: express.url, ceiling: ceiling.url };
  const results: Record<keyof typeof targets, LoadResult[]> = { till: [], express: [], ceiling: [] };
  try {
    for (const [name, url] of Object.entries(targets)) {
      const probe = await fetch(url);
      if (probe.status !== 402) throw new Error(`${name} answered the challenge probe with ${probe.status}: ${await probe.text()}`);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['till', 'express', 'ceiling'] as const) {
        await challengeLoad(targets[name], { ...options, durationSeconds: WARMUP_SECONDS });
        const result = await challengeLoad(targets[name], options);
        log(
          `  402 challenge  ${name.padEnd(7)} ${fmt(result.requestsPerSecond).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms${result.failures ? `  ${result.failures} NOT 402` : ''}`,
        );
        results[name].push(result);
      }
    }
  } finally {
    await express.server.stop();
    await ceiling.server.stop();
  }
  const summary = (runs: LoadResult[]) => ({
    requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
    latencyP50: mean(runs.map((r) => r.latencyP50)),
    latencyP99: mean(runs.map((r) => r.latencyP99)),
    failures: runs.reduce((sum, r) => sum + r.failures, 0),
  });
  const tillFigures = summary(results.till);
  const expressFigures = summary(results.express);
  const ceilingFigures = summary(results.ceiling);
  return {
    till: tillFigures,
    express: expressFigures,
    ceiling: ceilingFigures,
    ratio: tillFigures.requestsPerSecond / expressFigures.requestsPerSecond,
    ceilingShare: tillFigures.requestsPerSecond / ceilingFigures.requestsPerSecond,
    // Each round's own ratio, so a noisy run shows as a spread.
    roundRatios: results.till.map((run, i) => run.requestsPerSecond / results.express[i]!.requestsPerSecond),
  };
}

/** Sums of the histogram series Till exports: the x402 route answered 200, and every facilitator call. */
async function metricSums(base: string): Promise<{ request: number; requests: number; facilitator: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const sum = (pattern: RegExp) =>
    text
      .split('\n')
      .filter((line) => pattern.test(line))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  const requestSeries = `route="${X402_ROUTE}",status="200"`;
  return {
    request: sum(new RegExp(`^till_http_request_duration_seconds_sum\\{[^}]*${requestSeries.replace(/[/:]/g, '\\$&')}`)),
    requests: sum(new RegExp(`^till_http_request_duration_seconds_count\\{[^}]*${requestSeries.replace(/[/:]/g, '\\$&')}`)),
    facilitator: sum(/^till_facilitator_call_duration_seconds_sum\{[^}]*operation="(verify|settle)"/),
  };
}

async function measureAddedLatency(sandbox: SpawnedSandbox, till: Till, log: (line: string) => void) {
  const perPayerUsdc = ((Number(PRICE_UNITS) * Math.ceil(PAID_REQUESTS / PAYERS)) / 1e6 + 1).toString();
  const faucet = sandboxOverHttp(sandbox);
  const payers = [];
  for (let i = 0; i < PAYERS; i++) payers.push(await fundedPayer(faucet, perPayerUsdc));
  const added: number[] = [];
  const serverSide: number[] = [];
  const facilitatorSide: number[] = [];
  const clientSide: number[] = [];
  let failed = 0;
  let previous = await metricSums(till.base);
  for (let i = 0; i < PAID_REQUESTS; i++) {
    // The challenge keeps a quote current; it is a 402 and stays out of the status-200 series.
    const offer = await challenge(till.base, till.sessionId);
    const { header } = await signedPayment(payers[i % PAYERS]!, faucet.usdcAddress, offer, { validBefore: nowSeconds() + VALIDITY_S });
    const started = performance.now();
    const response = await pay(till.base, till.sessionId, header);
    await response.arrayBuffer();
    const elapsed = performance.now() - started;
    const current = await metricSums(till.base);
    if (response.status !== 200 || current.requests !== previous.requests + 1) {
      failed++;
    } else {
      const request = (current.request - previous.request) * 1000;
      const facilitator = (current.facilitator - previous.facilitator) * 1000;
      serverSide.push(request);
      facilitatorSide.push(facilitator);
      added.push(request - facilitator);
      clientSide.push(elapsed);
    }
    previous = current;
  }
  const figures = {
    paid: added.length,
    failed,
    addedP50Ms: percentile(added, 50),
    addedP90Ms: percentile(added, 90),
    addedP99Ms: percentile(added, 99),
    addedMeanMs: mean(added),
    requestP50Ms: percentile(serverSide, 50),
    facilitatorP50Ms: percentile(facilitatorSide, 50),
    clientP50Ms: percentile(clientSide, 50),
  };
  log(`  paid requests  ${figures.paid} settled${failed ? `, ${failed} FAILED` : ''}`);
  log(
    `  added by Till  p50 ${fmt(figures.addedP50Ms, 2)} ms  p90 ${fmt(figures.addedP90Ms, 2)} ms  p99 ${fmt(figures.addedP99Ms, 2)} ms  (request p50 ${fmt(figures.requestP50Ms, 1)} ms, facilitator verify+settle p50 ${fmt(figures.facilitatorP50Ms, 1)} ms, client p50 ${fmt(figures.clientP50Ms, 1)} ms)`,
  );
  return figures;
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
      const latency = await measureAddedLatency(sandbox, till, log);
      const meetsThroughput = throughput.ratio >= THROUGHPUT_TARGET;
      const meetsLatency = latency.addedP50Ms <= ADDED_LATENCY_TARGET_MS;
      const summary = [
        `x402: challenge throughput Till ${fmt(throughput.till.requestsPerSecond)} req/s vs @x402/express ${fmt(throughput.express.requestsPerSecond)} req/s = ${fmt(throughput.ratio, 2)}× (target ≥ ${THROUGHPUT_TARGET}×: ${meetsThroughput ? 'met' : 'MISSED'}); ${fmt(throughput.ceilingShare * 100)}% of the node:http ceiling (${fmt(throughput.ceiling.requestsPerSecond)} req/s)`,
        `x402: latency added to a paid request p50 ${fmt(latency.addedP50Ms, 2)} ms over ${latency.paid} payments (target ≤ ${ADDED_LATENCY_TARGET_MS} ms: ${meetsLatency ? 'met' : 'MISSED'})`,
      ].join('\n');
      const markdown = [
        `| 402 challenge, ${options.connections} connections, ${options.durationSeconds} s × ${ROUNDS} | req/s | p50 | p99 |`,
        '|---|---:|---:|---:|',
        `| Till \`GET /x402/session/{id}\` (SQLite) | ${fmt(throughput.till.requestsPerSecond)} | ${fmt(throughput.till.latencyP50, 1)} ms | ${fmt(throughput.till.latencyP99, 1)} ms |`,
        `| \`@x402/express\` static-price route | ${fmt(throughput.express.requestsPerSecond)} | ${fmt(throughput.express.latencyP50, 1)} ms | ${fmt(throughput.express.latencyP99, 1)} ms |`,
        `| Ceiling: bare \`node:http\` sending Till's 402 pre-built | ${fmt(throughput.ceiling.requestsPerSecond)} | ${fmt(throughput.ceiling.latencyP50, 1)} ms | ${fmt(throughput.ceiling.latencyP99, 1)} ms |`,
        '',
        `Ratio Till / @x402/express: **${fmt(throughput.ratio, 2)}×** (target ≥ ${THROUGHPUT_TARGET}×; by round ${throughput.roundRatios.map((r) => `${fmt(r, 2)}×`).join(', ')}); Till keeps **${fmt(throughput.ceilingShare * 100)}%** of the node:http ceiling${throughput.till.failures + throughput.express.failures + throughput.ceiling.failures ? `; ${throughput.till.failures + throughput.express.failures + throughput.ceiling.failures} answers were not 402` : ''}.`,
        '',
        `| ${latency.paid} paid requests${latency.failed ? ` (${latency.failed} failed)` : ''} | p50 | p90 | p99 |`,
        '|---|---:|---:|---:|',
        `| Added by Till (request − verify − settle) | **${fmt(latency.addedP50Ms, 2)} ms** | ${fmt(latency.addedP90Ms, 2)} ms | ${fmt(latency.addedP99Ms, 2)} ms |`,
        `| Request, server side | ${fmt(latency.requestP50Ms, 1)} ms | | |`,
        `| Facilitator verify + settle | ${fmt(latency.facilitatorP50Ms, 1)} ms | | |`,
        `| Request, client side | ${fmt(latency.clientP50Ms, 1)} ms | | |`,
        '',
        `Target for the added latency: p50 ≤ ${ADDED_LATENCY_TARGET_MS} ms.`,
      ].join('\n');
      return { name: 'x402', summary, markdown, throughput, latency };
    } finally {
      await till.stop();
    }
  } finally {
    await sandbox.stop();
  }
}

if (process.argv[1] === THIS_FILE) {
  if (process.argv[2] === SERVE_EXPRESS) await serveExpress();
  else if (process.argv[2] === SERVE_CEILING) await serveCeiling();
  else {
    const report = await run();
    process.stdout.write(`\n${report.summary}\n\n${report.markdown}\n`);
  }
}
