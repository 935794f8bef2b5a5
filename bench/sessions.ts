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
  failureWithOutput,
  fmt,
  type LoadRequest,
  type LoadResult,
  loadRow,
  postgresUnreachable,
  ratioReport,
  runLoad,
  type Skipped,
  startServer,
} from './support.ts';

type Target = 'ceiling' | 'till';

const ROUNDS = 3;
const WARMUP_SECONDS = 2;
const SLICE_SECONDS = 2;
/** Till / ceiling that each run must reach. */
const TARGETS: Record<Engine, number> = { sqlite: 0.8, postgres: 0.6 };
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

type Started = { request: LoadRequest; stop(): Promise<void> };

/** A target ready for load: a fresh database, a merchant, the server in a child process, answering a probe, warmed up. */
async function start(engine: Engine, target: Target, options: BenchOptions): Promise<Started> {
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
    const stop = async () => {
      await server.stop();
      await storage.drop();
    };
    try {
      const request = { url: base + SESSIONS_PATH, method: 'POST' as const, headers: apiHeaders(apiKey), body: BODY };
      const probe = await sessionRequest(base, apiKey, 'POST', BODY.replace('[<id>]', 'probe'));
      if (probe.status !== 201) throw new Error(`${target} answered the probe with ${probe.status}: ${await probe.text()}`);
      await runLoad(request, { connections: options.connections, durationSeconds: WARMUP_SECONDS });
      return { request, stop };
    } catch (error) {
      await stop();
      throw failureWithOutput(error, server);
    }
  } catch (error) {
    await storage.drop();
    throw error;
  }
}

/**
 * One run: the ceiling and Till, each on its own fresh database, loaded in turn in slices of
 * SLICE_SECONDS (the first of each slice pair alternating), so that a machine whose load drifts
 * within the run weighs on both alike; each side gets the run's duration in all.
 */
async function measurePair(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<Pair> {
  const slices = Math.max(1, Math.round(options.durationSeconds / SLICE_SECONDS));
  const started: Partial<Record<Target, Started>> = {};
  try {
    started.ceiling = await start(engine, 'ceiling', options);
    started.till = await start(engine, 'till', options);
    const results: Record<Target, LoadResult[]> = { ceiling: [], till: [] };
    for (let slice = 0; slice < slices; slice++) {
      const order: Target[] = slice % 2 === 0 ? ['ceiling', 'till'] : ['till', 'ceiling'];
      for (const target of order) {
        results[target].push(await runLoad(started[target]!.request, { connections: options.connections, durationSeconds: options.durationSeconds / slices }));
      }
    }
    const ceiling = averageLoad(results.ceiling);
    const till = averageLoad(results.till);
    for (const [target, result] of [
      ['ceiling', ceiling],
      ['till', till],
    ] as const) {
      log(
        `  ${engine.padEnd(8)} ${target.padEnd(7)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${fmt(result.latencyP50, 1)} ms  p99 ${fmt(result.latencyP99, 1)} ms${result.failures ? `  ${result.failures} FAILED` : ''}`,
      );
    }
    return { ceiling, till, ratio: till.requestsPerSecond / ceiling.requestsPerSecond };
  } finally {
    await started.till?.stop();
    await started.ceiling?.stop();
  }
}

type Pair = { ceiling: LoadResult; till: LoadResult; ratio: number };
/** `ratio` is the lowest of the runs' ratios: the target must hold in each run, not only on average. */
type EngineFigures = { engine: Engine; pairs: Pair[]; ceiling: LoadResult; till: LoadResult; ratio: number } | Skipped;

async function benchEngine(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<EngineFigures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const pairs: Pair[] = [];
  // Alternating ceiling and Till spreads a noisy machine's drift over both; each pair gives one ratio.
  for (let round = 0; round < ROUNDS; round++) {
    pairs.push(await measurePair(engine, options, log));
    log(`  ${engine.padEnd(8)} run ${round + 1}: Till / ceiling ${fmt(pairs.at(-1)!.ratio, 2)}`);
  }
  const ceiling = averageLoad(pairs.map((pair) => pair.ceiling));
  const till = averageLoad(pairs.map((pair) => pair.till));
  return { engine, pairs, ceiling, till, ratio: Math.min(...pairs.map((pair) => pair.ratio)) };
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const figures: EngineFigures[] = [];
  for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, options, log));
  return ratioReport({
    name: 'sessions',
    intro: `Measured ${new Date().toISOString().slice(0, 10)}: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} runs each loading ceiling and Till in turn in ${SLICE_SECONDS} s slices; each run's ratio, then the means. Target: every run ≥ ${TARGETS.postgres} on PostgreSQL, ≥ ${TARGETS.sqlite} on SQLite.`,
    labelColumn: 'Server',
    ratioColumn: 'Till / ceiling',
    target: (figure) => TARGETS[figure.engine],
    figures,
    rows: (figure) => [
      ...figure.pairs.flatMap((pair, index) => [
        loadRow(figure.engine, `run ${index + 1}: ceiling (node:http + INSERT)`, pair.ceiling, ''),
        loadRow(figure.engine, `run ${index + 1}: Till`, pair.till, `**${fmt(pair.ratio, 2)}**`),
      ]),
      loadRow(figure.engine, 'mean: ceiling', figure.ceiling, ''),
      loadRow(figure.engine, 'mean: Till', figure.till, fmt(figure.till.requestsPerSecond / figure.ceiling.requestsPerSecond, 2)),
    ],
    summary: (figure, verdict) =>
      `${figure.engine}: Till / ceiling per run ${figure.pairs.map((pair) => fmt(pair.ratio, 2)).join(', ')} (mean Till ${fmt(figure.till.requestsPerSecond, 0)} req/s, ceiling ${fmt(figure.ceiling.requestsPerSecond, 0)} req/s); lowest ${fmt(figure.ratio, 2)} (${verdict})`,
  });
}
