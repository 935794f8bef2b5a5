// POST /api/checkout/v2/payment_session under load, on SQLite and PostgreSQL, each beside its
// ceiling: a bare node:http server doing the same INSERT through the same driver.
import { freePort } from '../src/testing/environment.ts';
import { apiHeaders, SESSIONS_PATH, sessionRequest } from '../src/testing/shop.ts';
import {
  averageLoad,
  type BenchOptions,
  type BenchReport,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  type Engine,
  fmt,
  type LoadResult,
  loadRow,
  postgresUnreachable,
  ratioReport,
  runLoad,
  type Skipped,
  startServer,
} from './support.ts';

type Target = 'ceiling' | 'till';

const ROUNDS = 2;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 0.6;
const BODY = JSON.stringify({
  amount: 12.5,
  currency: 'EUR',
  orderId: 'bench-[<id>]',
  concept: 'Benchmark order',
  successUrl: 'https://shop.example/thanks',
});

const SERVERS: Record<Target, { args: string[]; readyPath: string }> = {
  till: { args: ['src/cli/main.ts', 'serve'], readyPath: '/healthz' },
  ceiling: { args: ['bench/servers/ceiling.ts'], readyPath: '/' },
};

/** One measured run: a fresh database, a merchant, the server in a child process, a warm-up, then the load. */
async function measure(engine: Engine, target: Target, options: BenchOptions, log: (line: string) => void): Promise<LoadResult> {
  const storage = await createBenchStorage(engine, 'till-bench-');
  const port = await freePort();
  const env = childEnv({
    ...storage.settings,
    PORT: String(port),
    TILL_LOG_LEVEL: 'warn',
    TILL_NO_SANDBOX: 'true',
  });
  try {
    const { merchantId, apiKey } = await createMerchantWithCli(env);
    const base = `http://127.0.0.1:${port}`;
    const server = await startServer(SERVERS[target].args, { ...env, BENCH_MERCHANT_ID: merchantId }, base + SERVERS[target].readyPath);
    try {
      const request = { url: base + SESSIONS_PATH, method: 'POST' as const, headers: apiHeaders(apiKey), body: BODY };
      const probe = await sessionRequest(base, apiKey, 'POST', BODY.replace('[<id>]', 'probe'));
      if (probe.status !== 201) throw new Error(`${target} answered the probe with ${probe.status}: ${await probe.text()}`);
      await runLoad(request, { connections: options.connections, durationSeconds: WARMUP_SECONDS });
      const result = await runLoad(request, options);
      log(
        `  ${engine.padEnd(8)} ${target.padEnd(7)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms${result.failures ? `  ${result.failures} FAILED` : ''}`,
      );
      return result;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${server.output()}`);
    } finally {
      await server.stop();
    }
  } finally {
    await storage.drop();
  }
}

type EngineFigures = { engine: Engine; ceiling: LoadResult; till: LoadResult; ratio: number } | Skipped;

async function benchEngine(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<EngineFigures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const runs: Record<Target, LoadResult[]> = { ceiling: [], till: [] };
  // Alternating ceiling and Till spreads a noisy machine's drift over both.
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of ['ceiling', 'till'] as const) runs[target].push(await measure(engine, target, options, log));
  }
  const ceiling = averageLoad(runs.ceiling);
  const till = averageLoad(runs.till);
  return { engine, ceiling, till, ratio: till.requestsPerSecond / ceiling.requestsPerSecond };
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const figures: EngineFigures[] = [];
  for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, options, log));
  return ratioReport({
    name: 'sessions',
    intro: `Measured ${new Date().toISOString().slice(0, 10)}: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} runs each alternating ceiling and Till; figures are the means.`,
    labelColumn: 'Server',
    ratioColumn: 'Till / ceiling',
    target: TARGET_RATIO,
    figures,
    rows: (figure) => [
      loadRow(figure.engine, 'ceiling (node:http + INSERT)', figure.ceiling, ''),
      loadRow(figure.engine, 'Till', figure.till, `**${fmt(figure.ratio, 2)}**`),
    ],
    summary: (figure, verdict) =>
      `${figure.engine}: Till ${fmt(figure.till.requestsPerSecond, 0)} req/s, ceiling ${fmt(figure.ceiling.requestsPerSecond, 0)} req/s → ${fmt(figure.ratio, 2)} (${verdict})`,
  });
}
