// Every query on a request path uses an index: the statements the service sends while serving a
// representative set of requests are captured, then each is EXPLAINed with its own parameters, and
// a scan of a table that grows with traffic fails the test. On SQLite a plan's `SCAN <table>` (the
// whole table, or the whole of an index) is refused; on PostgreSQL, with sequential scans disabled
// so that the planner takes any usable index, a `Seq Scan` or an index scan without an index
// condition (a walk over the whole index) is.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { createUser } from '../src/accounts/users.ts';
import type { DatabaseKind, Db } from '../src/db/index.ts';
import { authorizedAgent, callMcpTool } from '../src/testing/agent.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { Browser } from '../src/testing/page-browser.ts';
import { newAccount } from '../src/testing/payer.ts';
import { readSession, sessionRequest } from '../src/testing/shop.ts';

/**
 * Tables that grow with traffic (sessions, payments, their quotes and events, deliveries, audit
 * rows, sign-ins, rate-limit windows): a request must reach their rows through an index. The others (merchants, their
 * keys, users, webhook endpoints, OAuth clients and signing keys) grow with the number of merchants
 * and may be scanned.
 */
const LARGE_TABLES = new Set([
  'payment_sessions',
  'payments',
  'payment_quotes',
  'idempotency_keys',
  'webhook_events',
  'webhook_deliveries',
  'webhook_attempts',
  'mcp_tool_calls',
  'merchant_events',
  'user_sessions',
  'sign_in_throttle',
  'rate_limit_windows',
  'oauth_grants',
  'oauth_grant_secrets',
  'oauth_authorization_requests',
  'payment_attempts',
]);

/** Statements with no plan: transaction control and settings. */
const PLANLESS = /^\s*(begin|commit|rollback|savepoint|release|set\s)/i;

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; 'Index Cond'?: string; Plans?: PlanNode[] };

/** How a query reads a large table without an index, one line per such read; none when every read uses one. */
async function scansOfLargeTables(db: Db, kind: DatabaseKind, query: Pick<CompiledQuery, 'sql' | 'parameters'>): Promise<string[]> {
  if (kind === 'sqlite') {
    const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
    // SQLite's plan names a table by its alias when it has one.
    const tables = new Map([...query.sql.matchAll(/\b(?:from|join)\s+"?(\w+)"?(?:\s+(?:as\s+)?"?(\w+)"?)?/gi)].map((m) => [m[2] ?? m[1]!, m[1]!]));
    return plan.rows
      .map((row) => row.detail)
      .filter((detail) => {
        const scanned = /^SCAN (\w+)/.exec(detail)?.[1];
        return scanned !== undefined && LARGE_TABLES.has(tables.get(scanned) ?? scanned);
      });
  }
  // The plans are asked for in a transaction that is always rolled back: it may drop indexes.
  const verdict = await db
    .transaction()
    .execute(async (trx) => {
      await sql`SET LOCAL enable_seqscan = off`.execute(trx);
      for (;;) {
        const result = await trx.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${query.sql}`, [...query.parameters]),
        );
        const { scans, walks } = readsOfLargeTables(result.rows[0]!['QUERY PLAN'][0].Plan);
        if (scans.length || !walks.length) throw new RolledBack([...scans, ...walks.map((walk) => walk.text)]);
        // On a near-empty table the planner may walk a small index whole rather than look one row
        // up in another; without the walked index it shows whether an index serves the query.
        for (const { index } of walks) {
          const constraint = await sql<{
            conname: string;
            table: string;
          }>`SELECT conname, conrelid::regclass::text AS table FROM pg_constraint WHERE conindid = ${index}::regclass`.execute(trx);
          const owner = constraint.rows[0];
          if (owner) await sql`ALTER TABLE ${sql.id(owner.table)} DROP CONSTRAINT ${sql.id(owner.conname)} CASCADE`.execute(trx);
          else await sql`DROP INDEX ${sql.id(index)}`.execute(trx);
        }
      }
    })
    .catch((error: unknown) => {
      if (error instanceof RolledBack) return error.scans;
      throw error;
    });
  return verdict;
}

class RolledBack extends Error {
  readonly scans: string[];
  constructor(scans: string[]) {
    super('rolled back');
    this.scans = scans;
  }
}

/** A plan's sequential scans of large tables, and its walks over a whole index of one (an index scan without an index condition). */
function readsOfLargeTables(plan: PlanNode): { scans: string[]; walks: { index: string; text: string }[] } {
  const scans: string[] = [];
  const walks: { index: string; text: string }[] = [];
  const visit = (node: PlanNode) => {
    const table = node['Relation Name'];
    if (table !== undefined && LARGE_TABLES.has(table)) {
      if (node['Node Type'] === 'Seq Scan') scans.push(`Seq Scan on ${table}`);
      else if (/Index/.test(node['Node Type']) && node['Index Cond'] === undefined && node['Index Name'])
        walks.push({ index: node['Index Name'], text: `${node['Node Type']} on ${table} using ${node['Index Name']} without a condition` });
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(plan);
  return { scans, walks };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`query plans of the request paths on ${engine}`, skip, () => {
    let env: PayingShop;
    let capturing = false;
    const captured = new Map<string, CompiledQuery>();
    const served: string[] = [];

    before(async () => {
      env = await startPayingShop(
        engine,
        {},
        {
          onQuery: (query) => {
            if (capturing && !PLANLESS.test(query.sql) && !captured.has(query.sql)) captured.set(query.sql, query);
          },
        },
      );
      const { service, apiKey, merchantId } = env;
      const app = service.app;
      const email = `plans-${engine}-${Date.now()}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: 'correct horse battery staple' });
      const agent = await authorizedAgent(service.context, merchantId, ['settings:read', 'orders:read', 'keys:read', 'refunds:read']);
      const browser = new Browser(service);
      const serve = async (what: string, answer: Promise<{ statusCode?: number; status?: number }>, expected: number) => {
        const response = await answer;
        assert.equal(response.statusCode ?? response.status, expected, what);
        served.push(what);
      };

      capturing = true;
      // The merchant's server: E1 (plain, with an Idempotency-Key, and its replay), E2, the read.
      const created = await sessionRequest(service, apiKey, 'POST', { amount: 2, currency: 'USD', orderId: 'plans-1' });
      await serve('E1', Promise.resolve(created), 201);
      const sessionId = created.json().sessionId as string;
      for (const round of [1, 2]) {
        await serve(
          `E1 with Idempotency-Key (${round})`,
          sessionRequest(service, apiKey, 'POST', { amount: 3, currency: 'USD' }, { 'idempotency-key': 'plans' }),
          201,
        );
      }
      await serve('E2', sessionRequest(service, apiKey, 'PUT', { sessionId, amount: 2.5 }), 200);
      await serve('session read', readSession(service, apiKey, sessionId), 200);
      // The session list: its first page, a page after a cursor with every filter, and by orderId.
      const list = (query: string) => app.inject({ method: 'GET', url: `/api/checkout/v2/payment_session?${query}`, headers: { 'x-sc-apikey': apiKey } });
      const first = await list('limit=1');
      await serve('session list', Promise.resolve(first), 200);
      const cursor = first.json().nextCursor as string;
      const range = 'createdFrom=2020-01-01T00:00:00Z&createdTo=2100-01-01T00:00:00Z';
      await serve('session list, filtered, after a cursor', list(`status=OPEN,EXPIRED&${range}&limit=5&cursor=${cursor}`), 200);
      await serve('session list by orderId', list('orderId=plans-1'), 200);
      // The buyer: the hosted page, the challenge and a paid proof.
      await serve('checkout page', app.inject({ method: 'GET', url: `/checkout/pay?uid=${sessionId}` }), 200);
      const { sessionId: paidSession, payer, offer } = await env.readyToPay({ amount: 0.01, currency: 'USD', orderId: 'plans-paid' });
      served.push('E3 challenge');
      const paid = await env.pay(paidSession, (await env.signedPayment(payer, offer)).header);
      const paymentId = ((await paid.json()) as { paymentId: string }).paymentId;
      await serve('E3 paid proof', Promise.resolve(paid), 200);
      // A refused proof, new and repeated, is recorded against its session (x402/attempts.ts).
      const open = await env.challenge(sessionId);
      for (const round of [1, 2])
        await serve(`E3 refused proof (${round})`, env.pay(sessionId, (await env.signedPayment(payer, { ...open, value: open.value + 1n })).header), 402);
      // One its named payer did not sign only adds to the session's unsigned count.
      for (const round of [1, 2])
        await serve(
          `E3 refused unsigned proof (${round})`,
          env.pay(sessionId, (await env.signedPayment(newAccount(), open, { from: payer.address })).header),
          402,
        );
      await serve('receipt JSON', app.inject({ method: 'GET', url: `/checkout/v2/orders/receipt/${paymentId}` }), 200);
      await serve('receipt HTML', app.inject({ method: 'GET', url: `/checkout/v2/orders/receipt/${paymentId}`, headers: { accept: 'text/html' } }), 200);
      await serve('webhook deliveries', app.inject({ method: 'GET', url: '/api/checkout/v2/webhooks/deliveries', headers: { 'x-sc-apikey': apiKey } }), 200);
      // The events API: a test event made, the first page, a page after a cursor with every filter, oldest first, and one event.
      const trigger = () =>
        app.inject({
          method: 'POST',
          url: '/api/checkout/v2/events/test',
          headers: { 'x-sc-apikey': apiKey, 'content-type': 'application/json' },
          payload: '{"type":"payment.succeeded"}',
        });
      await serve('test event', trigger(), 201);
      const events = (query: string) => app.inject({ method: 'GET', url: `/api/checkout/v2/events?${query}`, headers: { 'x-sc-apikey': apiKey } });
      const firstEvents = await events('limit=1');
      await serve('event list', Promise.resolve(firstEvents), 200);
      const eventsCursor = firstEvents.json().nextCursor as string;
      assert.ok(eventsCursor, 'the paid session and the test event make two pages of one');
      await serve('event list, filtered, after a cursor', events(`type=payment.succeeded,session.expired&${range}&limit=5&cursor=${eventsCursor}`), 200);
      await serve('event list, oldest first', events(`order=oldest&createdFrom=2020-01-01T00:00:00Z`), 200);
      const eventId = (firstEvents.json().events as { id: string }[])[0]!.id;
      const refunds = (query: string) => app.inject({ method: 'GET', url: `/api/checkout/v2/refunds?${query}`, headers: { 'x-sc-apikey': apiKey } });
      await serve('refund list', refunds('limit=5'), 200);
      await serve('refund list by payment', refunds(`paymentId=${paymentId}&status=SUCCEEDED,PENDING`), 200);
      await serve('event read', app.inject({ method: 'GET', url: `/api/checkout/v2/events/${eventId}`, headers: { 'x-sc-apikey': apiKey } }), 200);
      // A coding agent's tools.
      for (const [tool, args] of [
        ['list_orders', {}],
        ['get_receipt', { publicOrderId: paymentId }],
        ['list_api_keys', {}],
        ['get_payment_settings', {}],
        ['list_payment_sessions', { orderId: 'plans-1' }],
        ['list_refunds', { paymentId }],
      ] as const) {
        const answer = await callMcpTool(app, agent.accessToken, tool, args);
        assert.equal(answer.body?.result?.isError ?? false, false, `${tool}: ${JSON.stringify(answer.body)}`);
        served.push(`MCP ${tool}`);
      }
      // A merchant user: sign-in and the dashboard's pages.
      await serve('sign-in page', browser.request('GET', '/sign-in'), 200);
      await serve('sign-in', browser.signIn(email, 'correct horse battery staple'), 303);
      const filters = [`status=SUCCESS&from=2020-01-01&to=2100-01-01`, `q=${paymentId}`, 'q=plans-paid', `session=${paidSession}`];
      for (const page of [
        '/dashboard',
        '/dashboard/orders',
        ...filters.map((filter) => `/dashboard/orders?${filter}`),
        '/dashboard/orders.csv',
        '/dashboard/links',
        `/dashboard/links/${sessionId}`,
        '/dashboard/notifications',
        '/dashboard/developers',
      ]) {
        await serve(page, browser.request('GET', page), 200);
      }
      capturing = false;
    });
    after(() => env?.stop());

    test('the requests were served and their statements captured', () => {
      assert.ok(served.length >= 20, served.join(', '));
      for (const table of [
        'payment_sessions',
        'payments',
        'payment_quotes',
        'idempotency_keys',
        'user_sessions',
        'mcp_tool_calls',
        'payment_attempts',
        'webhook_events',
      ]) {
        assert.ok(
          [...captured.keys()].some((text) => text.includes(table)),
          `no captured statement reads or writes ${table}`,
        );
      }
    });

    test('every captured statement reaches the large tables through an index', async () => {
      const offenders: string[] = [];
      for (const query of captured.values()) {
        const scans = await scansOfLargeTables(env.service.context.db, env.service.context.dbKind, query);
        if (scans.length) offenders.push(`${scans.join('; ')}\n    ${query.sql}`);
      }
      assert.deepEqual(offenders, [], `${offenders.length} of ${captured.size} statements scan a large table:\n${offenders.join('\n')}`);
    });

    test('an unindexed query is flagged, and the same query on an index is not', async () => {
      const { db, dbKind } = env.service.context;
      const unindexed = db.selectFrom('payment_sessions').select('id').where('concept', '=', 'Benchmark order').compile();
      assert.notDeepEqual(await scansOfLargeTables(db, dbKind, unindexed), []);
      const ordered = db.selectFrom('payments').select('id').orderBy('public_order_id').limit(10).compile();
      assert.notDeepEqual(await scansOfLargeTables(db, dbKind, ordered), [], 'a walk over a whole index is a scan too');
      const aliased = db
        .selectFrom('payments as p')
        .innerJoin('payment_sessions as s', 's.id', 'p.session_id')
        .select('p.id')
        .where('p.failure_reason', '=', 'x')
        .compile();
      assert.notDeepEqual(await scansOfLargeTables(db, dbKind, aliased), [], 'a table read under an alias');
      const indexed = db.selectFrom('payment_sessions').select('id').where('id', '=', 'ps_x').compile();
      assert.deepEqual(await scansOfLargeTables(db, dbKind, indexed), []);
    });
  });
}
