// E1 with a client-credentials bearer token against E1 with an API key, alternated in the same
// server, on SQLite and PostgreSQL (target: bearer ≥ 0.9× the key); and the token endpoint's
// client-credentials throughput.
import { freePort } from '../src/testing/environment.ts';
import { apiHeaders, SESSIONS_PATH } from '../src/testing/shop.ts';
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
  type LoadResult,
  loadRow,
  postgresUnreachable,
  ratioReport,
  runLoad,
  runNode,
  type Skipped,
  startServer,
} from './support.ts';

const ROUNDS = 2;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 0.9;
const BODY = JSON.stringify({ amount: 12.5, currency: 'EUR', orderId: 'bench-[<id>]', concept: 'Benchmark order' });

type Figures = { engine: Engine; apiKey: LoadResult; bearer: LoadResult; token: LoadResult; ratio: number } | Skipped;

async function benchEngine(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<Figures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const storage = await createBenchStorage(engine, 'till-bench-auth-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({ ...storage.settings, PORT: String(port), TILL_BASE_URL: base, TILL_LOG_LEVEL: 'warn', TILL_NO_SANDBOX: 'true' });
  try {
    const { merchantId, apiKey } = await createMerchantWithCli(env);
    const client = JSON.parse(await runNode(['src/cli/main.ts', 'clients', 'create', '--merchant', merchantId, '--json'], env));
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    try {
      const tokenBody = JSON.stringify({ ...client, audience: `${base}/checkout`, grant_type: 'client_credentials' });
      const tokenRequest = { url: `${base}/oauth/token`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: tokenBody };
      const issued = await fetch(tokenRequest.url, { method: 'POST', headers: tokenRequest.headers, body: tokenBody });
      if (issued.status !== 200) throw new Error(`the token endpoint answered ${issued.status}: ${await issued.text()}`);
      const { access_token: accessToken } = (await issued.json()) as { access_token: string };
      const requests = {
        apiKey: { url: base + SESSIONS_PATH, method: 'POST' as const, headers: apiHeaders(apiKey), body: BODY },
        bearer: { url: base + SESSIONS_PATH, method: 'POST' as const, headers: { ...apiHeaders(), authorization: `Bearer ${accessToken}` }, body: BODY },
      };
      await runLoad(requests.apiKey, { connections: options.connections, durationSeconds: WARMUP_SECONDS });
      await runLoad(requests.bearer, { connections: options.connections, durationSeconds: WARMUP_SECONDS });
      const runs: Record<'apiKey' | 'bearer', LoadResult[]> = { apiKey: [], bearer: [] };
      // Alternating spreads a noisy machine's drift over both.
      for (let round = 0; round < ROUNDS; round++) {
        for (const kind of ['apiKey', 'bearer'] as const) {
          const result = await runLoad(requests[kind], options, 201);
          log(
            `  ${engine.padEnd(8)} E1 ${kind.padEnd(6)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms`,
          );
          runs[kind].push(result);
        }
      }
      const token = await runLoad(tokenRequest, options, 200);
      log(`  ${engine.padEnd(8)} token     ${fmt(token.requestsPerSecond, 0).padStart(6)} req/s  p50 ${token.latencyP50} ms  p99 ${token.latencyP99} ms`);
      const [keyed, bearer] = [averageLoad(runs.apiKey), averageLoad(runs.bearer)];
      return { engine, apiKey: keyed, bearer, token, ratio: bearer.requestsPerSecond / keyed.requestsPerSecond };
    } catch (error) {
      throw failureWithOutput(error, server);
    } finally {
      await server.stop();
    }
  } finally {
    await storage.drop();
  }
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const figures: Figures[] = [];
  for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, options, log));
  return ratioReport({
    name: 'auth',
    intro: `Measured ${new Date().toISOString().slice(0, 10)}: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up; E1 ${ROUNDS} runs each, alternating API key and bearer token in the same server; figures are the means.`,
    labelColumn: 'Request',
    ratioColumn: 'bearer / key',
    target: TARGET_RATIO,
    figures,
    rows: (figure) => [
      loadRow(figure.engine, 'E1, X-SC-ApiKey', figure.apiKey, ''),
      loadRow(figure.engine, 'E1, Authorization: Bearer', figure.bearer, `**${fmt(figure.ratio, 2)}**`),
      loadRow(figure.engine, 'POST /oauth/token (client credentials)', figure.token, ''),
    ],
    summary: (figure, verdict) =>
      `${figure.engine}: E1 bearer ${fmt(figure.bearer.requestsPerSecond, 0)} req/s, API key ${fmt(figure.apiKey.requestsPerSecond, 0)} req/s → ${fmt(figure.ratio, 2)} (${verdict}); token endpoint ${fmt(figure.token.requestsPerSecond, 0)} req/s`,
  });
}
