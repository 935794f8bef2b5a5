// tools/call of a read tool (get_payment_settings) on Till's MCP endpoint, with everything a real
// call goes through (bearer token, grant check, the hourly limit counted in the database, the
// tool's database read and the audit row, committed before the answer), against the SDK's bare
// stateless MCP server (bench/servers/mcp-bare.ts: createMcpHandler, one tool answering a constant,
// no auth, no I/O), alternated in the same run, on SQLite and PostgreSQL, for both protocol
// revisions Till serves. Target: Till ≥ 0.5× the bare server (a call reads the database and waits
// for a durable commit; the bare server does neither). Spec 8 allows 300 tool calls per hour per
// authorization, so the calls rotate over many grants, one token each, none of which reaches its
// limit: a call refused by the limit (a JSON-RPC error) counts as a failure.
import { freePort } from '../src/testing/environment.ts';
import {
  averageLoad,
  type BenchOptions,
  type BenchReport,
  childEnv,
  createBenchStorage,
  createMerchantWithCli,
  type Engine,
  fmt,
  type LoadRequest,
  type LoadResult,
  loadRow,
  postgresUnreachable,
  ratioReport,
  runNode,
  runRotatingLoad,
  type Skipped,
  startServer,
} from './support.ts';

const ROUNDS = 2;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 0.5;
const HOURLY_LIMIT = 300;
/** Enough grants for this many calls per second over the whole run with every grant under its limit. */
const PLANNED_CALLS_PER_SECOND = 5_000;
const TOOL = 'get_payment_settings';

/** A tools/call as each protocol revision sends it: 2025-11-25 (served statelessly) and 2026-07-28 (stateless by design). */
const PROTOCOLS: { version: string; headers: Record<string, string>; body: string }[] = [
  {
    version: '2025-11-25',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: TOOL, arguments: {} } }),
  },
  {
    version: '2026-07-28',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': TOOL,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: TOOL,
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'till-bench', version: '1.0.0' },
        },
      },
    }),
  },
];

type Figure = { engine: Engine; protocol: string; bare: LoadResult; till: LoadResult; ratio: number; grants: number };

async function benchEngine(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<(Figure | Skipped)[]> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return [{ engine, skipped: unreachable }];
  const storage = await createBenchStorage(engine, 'till-bench-mcp-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({ ...storage.settings, PORT: String(port), TILL_BASE_URL: base, TILL_LOG_LEVEL: 'warn', TILL_NO_SANDBOX: 'true' });
  const barePort = await freePort();
  const bareUrl = `http://127.0.0.1:${barePort}/mcp`;
  try {
    const { merchantId } = await createMerchantWithCli(env);
    const seconds = PROTOCOLS.length * (WARMUP_SECONDS + ROUNDS * options.durationSeconds);
    const grants = Math.ceil((PLANNED_CALLS_PER_SECOND * seconds) / (HOURLY_LIMIT - 1));
    const tokens = JSON.parse(
      await runNode(['bench/servers/mcp-grants.ts'], { ...env, BENCH_MERCHANT_ID: merchantId, BENCH_AGENTS: String(grants) }),
    ) as string[];
    const bearers = tokens.map((token) => ({ authorization: `Bearer ${token}` }));
    log(`  ${engine.padEnd(8)} ${grants} grants authorized, one token each`);
    const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
    const bare = await startServer(['bench/servers/mcp-bare.ts'], childEnv({ PORT: String(barePort) }), bareUrl);
    try {
      const figures: Figure[] = [];
      for (const protocol of PROTOCOLS) {
        const requests: Record<'bare' | 'till', LoadRequest> = {
          bare: { url: bareUrl, method: 'POST', headers: protocol.headers, body: protocol.body },
          till: { url: `${base}/mcp`, method: 'POST', headers: protocol.headers, body: protocol.body },
        };
        // The bare server gets the same rotating headers (it ignores them), so both pay the same load generator.
        const warmup = { connections: options.connections, durationSeconds: WARMUP_SECONDS };
        await runRotatingLoad(requests.bare, bearers, warmup);
        await runRotatingLoad(requests.till, bearers, warmup);
        const runs: Record<'bare' | 'till', LoadResult[]> = { bare: [], till: [] };
        // Alternating spreads a noisy machine's drift over both.
        for (let round = 0; round < ROUNDS; round++) {
          for (const kind of ['bare', 'till'] as const) {
            const result = await runRotatingLoad(requests[kind], bearers, options);
            log(
              `  ${engine.padEnd(8)} ${protocol.version} ${kind.padEnd(4)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms${result.failures ? `  ${result.failures} FAILED` : ''}`,
            );
            runs[kind].push(result);
          }
        }
        const [bareMean, tillMean] = [averageLoad(runs.bare), averageLoad(runs.till)];
        figures.push({
          engine,
          protocol: protocol.version,
          bare: bareMean,
          till: tillMean,
          ratio: tillMean.requestsPerSecond / bareMean.requestsPerSecond,
          grants,
        });
      }
      return figures;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${server.output()}\n${bare.output()}`);
    } finally {
      await bare.stop();
      await server.stop();
    }
  } finally {
    await storage.drop();
  }
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const figures: (Figure | Skipped)[] = [];
  for (const engine of ['sqlite', 'postgres'] as const) figures.push(...(await benchEngine(engine, options, log)));
  const grants = figures.find((figure): figure is Figure => 'grants' in figure)?.grants ?? 0;
  return ratioReport({
    name: 'mcp',
    intro: `Measured ${new Date().toISOString().slice(0, 10)}: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} runs each alternating the bare SDK server and Till; figures are the means. Till's calls rotate over ${grants} grants (one token each), so none passes ${HOURLY_LIMIT} calls in the hour.`,
    labelColumn: `tools/call ${TOOL}`,
    ratioColumn: 'Till / bare',
    target: TARGET_RATIO,
    figures,
    rows: (figure) => [
      loadRow(figure.engine, `${figure.protocol}, bare SDK server (constant, no auth)`, figure.bare, ''),
      loadRow(figure.engine, `${figure.protocol}, Till (token, grant, limit, audit)`, figure.till, `**${fmt(figure.ratio, 2)}**`),
    ],
    summary: (figure, verdict) =>
      `${figure.engine} ${figure.protocol}: Till ${fmt(figure.till.requestsPerSecond, 0)} req/s, bare SDK server ${fmt(figure.bare.requestsPerSecond, 0)} req/s → ${fmt(figure.ratio, 2)} (${verdict})`,
  });
}
