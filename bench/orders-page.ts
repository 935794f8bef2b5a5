// The dashboard's orders page (GET /dashboard/orders, signed in) with 10,000 orders in the database,
// then with 1,000,000 (target: p99 at 1M at most 1.2× p99 at 10k). Orders are seeded with a few
// INSERT … SELECT statements over a generated series, straight into the tables.
import { sql } from 'kysely';
import { createUser } from '../src/accounts/users.ts';
import { openDatabase } from '../src/db/index.ts';
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
  type LoadResult,
  loadRow,
  postgresUnreachable,
  runLoad,
  type Skipped,
  startServer,
} from './support.ts';

const ROUNDS = 3;
const WARMUP_SECONDS = 2;
const TARGET_RATIO = 1.2;
const SMALL = 10_000;
const LARGE = 1_000_000;
/** Payments per session: a payment link paid many times. */
const PER_SESSION = 100;
const EPOCH = Date.parse('2026-01-01T00:00:00Z');
const PASSWORD = 'bench password, long enough';
const PAGES = { all: '/dashboard/orders', paid: '/dashboard/orders?status=SUCCESS' } as const;

type Page = keyof typeof PAGES;
type Measured = Record<Page, LoadResult>;
type Figures = { engine: Engine; small: Measured; large: Measured; ratio: number; seedSeconds: number } | Skipped;

/** The rows `from` … `from + count - 1` as a table `n(i)`, and an integer written as upper-case hex of `width` digits. */
function dialect(engine: Engine) {
  return engine === 'sqlite'
    ? {
        series: (from: number, count: number) =>
          sql.raw(`(WITH RECURSIVE s(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM s WHERE i < ${from + count - 1}) SELECT i FROM s) AS n`),
        hex: (expr: string, width: number) => sql.raw(`printf('%0${width}X', ${expr})`),
        div: (a: string, b: number) => sql.raw(`(${a} / ${b})`),
      }
    : {
        series: (from: number, count: number) => sql.raw(`generate_series(${from}, ${from + count - 1}) AS n(i)`),
        hex: (expr: string, width: number) => sql.raw(`lpad(upper(to_hex(${expr})), ${width}, '0')`),
        div: (a: string, b: number) => sql.raw(`(${a} / ${b})`),
      };
}

/** Adds orders number `from` … `from + count - 1` of the merchant: sessions, quotes, then settled payments (one in 50 reversed), newer as the number grows. */
async function seedOrders(engine: Engine, databaseUrl: string, merchantId: string, from: number, count: number): Promise<void> {
  const handle = openDatabase({
    databaseKind: engine,
    databaseUrl,
    sqlitePath: engine === 'sqlite' ? databaseUrl.slice('sqlite:'.length) : undefined,
    databasePoolSize: 2,
  });
  const { series, hex, div } = dialect(engine);
  const db = handle.db;
  const epoch = sql.raw(String(EPOCH));
  try {
    const sessions = series(from / PER_SESSION, count / PER_SESSION);
    await sql`INSERT INTO payment_sessions (id, merchant_id, order_id, order_type, status, amount_minor, currency, editable, created_at, updated_at, version)
      SELECT 'ps_bench' || i, ${merchantId}, 'bench-' || i, 'STATIC', 'OPEN', 1250, 'EUR', 0, ${EPOCH}, ${EPOCH}, 1 FROM ${sessions}`.execute(db);
    await sql`INSERT INTO payment_quotes (id, session_id, session_version, amount_minor, currency, rate, rate_source, usdc_amount, pay_to, asset, created_at, expires_at)
      SELECT 'q_bench' || i, 'ps_bench' || i, 1, 1250, 'EUR', '1.08', 'fixed', 13500000, '0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002', ${EPOCH}, ${EPOCH}
      FROM ${series(from / PER_SESSION, count / PER_SESSION)}`.execute(db);
    const session = div('i', PER_SESSION);
    await sql`INSERT INTO payments (id, session_id, merchant_id, quote_id, status, exclusive, payer, pay_to, asset, value, nonce, valid_after, valid_before, signature,
        amount_minor, currency, rate, public_order_id, tx_hash, created_at, updated_at, settled_at)
      SELECT 'pay_bench' || i, 'ps_bench' || ${session}, ${merchantId}, 'q_bench' || ${session}, CASE WHEN i % 50 = 0 THEN 'REVERSED' ELSE 'SUCCESS' END, 0,
        '0x' || ${hex('i', 40)}, '0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002', 13500000, 'n' || i, 0, 0, '0x',
        1250, 'EUR', '1.08', 'TX-' || ${hex('i', 32)}, '0x' || ${hex('i', 64)}, ${epoch} + i * 1000, ${epoch} + i * 1000, ${epoch} + i * 1000
      FROM ${series(from, count)}`.execute(db);
    await sql.raw(engine === 'sqlite' ? 'PRAGMA optimize' : 'ANALYZE').execute(db);
  } finally {
    await handle.close();
  }
}

/** Signs the user in as a browser does and answers the cookies of the signed-in session. */
async function signIn(base: string, email: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const form = await fetch(`${base}/sign-in`);
  keep(form);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const answer = await fetch(`${base}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email, password: PASSWORD }).toString(),
  });
  keep(answer);
  if (answer.status !== 303) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`);
  return cookie();
}

async function measure(base: string, cookie: string, engine: Engine, label: string, options: BenchOptions, log: (line: string) => void): Promise<Measured> {
  const request = (page: Page) => ({ url: base + PAGES[page], method: 'GET' as const, headers: { cookie } });
  const check = await fetch(request('all').url, { headers: { cookie } });
  const body = await check.text();
  if (check.status !== 200 || !body.includes('TX-')) throw new Error(`the orders page answered ${check.status} without orders`);
  for (const page of Object.keys(PAGES) as Page[]) await runLoad(request(page), { connections: options.connections, durationSeconds: WARMUP_SECONDS });
  const runs: Record<Page, LoadResult[]> = { all: [], paid: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const page of Object.keys(PAGES) as Page[]) {
      const result = await runLoad(request(page), options, 200);
      log(
        `  ${engine.padEnd(8)} ${label.padEnd(4)} ${page.padEnd(4)} ${fmt(result.requestsPerSecond, 0).padStart(6)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms`,
      );
      runs[page].push(result);
    }
  }
  return { all: averageLoad(runs.all), paid: averageLoad(runs.paid) };
}

async function benchEngine(engine: Engine, options: BenchOptions, log: (line: string) => void): Promise<Figures> {
  const unreachable = await postgresUnreachable(engine);
  if (unreachable) return { engine, skipped: unreachable };
  const storage = await createBenchStorage(engine, 'till-bench-orders-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({ ...storage.settings, PORT: String(port), TILL_BASE_URL: base, TILL_LOG_LEVEL: 'warn', TILL_NO_SANDBOX: 'true' });
  const databaseUrl = storage.settings.TILL_DATABASE_URL;
  try {
    const { merchantId } = await createMerchantWithCli(env);
    const email = `bench-${engine}@shop.example`;
    const handle = openDatabase({
      databaseKind: engine,
      databaseUrl,
      sqlitePath: engine === 'sqlite' ? databaseUrl.slice('sqlite:'.length) : undefined,
      databasePoolSize: 1,
    });
    await createUser(handle.db, { merchantId, email, password: PASSWORD });
    await handle.close();
    await seedOrders(engine, databaseUrl, merchantId, 0, SMALL);
    const phase = async (label: string) => {
      const server = await startServer(['src/cli/main.ts', 'serve'], env, `${base}/healthz`);
      try {
        return await measure(base, await signIn(base, email), engine, label, options, log);
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${server.output()}`);
      } finally {
        await server.stop();
      }
    };
    const small = await phase('10k');
    const started = performance.now();
    await seedOrders(engine, databaseUrl, merchantId, SMALL, LARGE - SMALL);
    const seedSeconds = (performance.now() - started) / 1000;
    log(`  ${engine.padEnd(8)} seeded ${LARGE - SMALL} more orders in ${fmt(seedSeconds, 1)} s`);
    const large = await phase('1M');
    const ratio = Math.max(large.all.latencyP99 / small.all.latencyP99, large.paid.latencyP99 / small.paid.latencyP99);
    return { engine, small, large, ratio, seedSeconds };
  } finally {
    await storage.drop();
  }
}

export async function run(options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const figures: Figures[] = [];
  for (const engine of ['sqlite', 'postgres'] as const) figures.push(await benchEngine(engine, options, log));
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)}: ${options.connections} connections, ${options.durationSeconds} s per run after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} runs of each page alternating; figures are the means. One merchant holds every order; 1 in 50 is reversed. The ratio is the worse of the two pages' p99 at 1M over p99 at 10k (target ≤ ${TARGET_RATIO}).`,
    '',
    '| Engine | Page, orders in the database | req/s | p50 ms | p99 ms | p99 1M / 10k |',
    '|---|---|---:|---:|---:|---:|',
  ];
  const summary: string[] = [];
  for (const figure of figures) {
    if ('skipped' in figure) {
      lines.push(`| ${figure.engine} | skipped: ${figure.skipped} | | | | |`);
      summary.push(`${figure.engine}: skipped — ${figure.skipped}`);
      continue;
    }
    const ratio = (page: Page) => fmt(figure.large[page].latencyP99 / figure.small[page].latencyP99, 2);
    for (const page of Object.keys(PAGES) as Page[]) {
      lines.push(loadRow(figure.engine, `\`${PAGES[page]}\`, 10k`, figure.small[page], ''));
      lines.push(loadRow(figure.engine, `\`${PAGES[page]}\`, 1M`, figure.large[page], `**${ratio(page)}**`));
    }
    const verdict = figure.ratio <= TARGET_RATIO ? `meets the ${TARGET_RATIO} target` : `ABOVE the ${TARGET_RATIO} target`;
    summary.push(
      `${figure.engine}: p99 at 1M / 10k = ${ratio('all')} (all) and ${ratio('paid')} (paid) → ${verdict}; ${LARGE - SMALL} orders seeded in ${fmt(figure.seedSeconds, 1)} s`,
    );
  }
  return { name: 'orders-page', summary: summary.join('\n'), markdown: lines.join('\n') };
}
