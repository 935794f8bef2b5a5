import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { revokeGrant } from '../oauth/grants.ts';
import { authorizedAgent, callMcpTool } from '../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { listToolCalls, recordToolCall } from './audit.ts';
import { GroupCommit } from './group-commit.ts';
import { RATE_LIMITED_CODE } from './mcp.route.ts';

const isFinal = (error: unknown) => (error as Error).message === 'unreachable';

/** The batches written, and a write that waits until the test releases it. */
function heldWrites() {
  const writes: number[][] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  return { writes, held, release };
}

describe('group commit', () => {
  test('items added in the same turn are written in one batch, and each settles only after it', async () => {
    const { writes, held, release } = heldWrites();
    const group = new GroupCommit<number>(
      async (items) => {
        writes.push(items);
        await held;
      },
      { isFinal, maxBatch: 100, concurrency: 1 },
    );
    const settled: number[] = [];
    const waits = Array.from({ length: 10 }, (_, i) => group.add(i).then(() => settled.push(i)));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(writes, [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]);
    assert.deepEqual(settled, [], 'nothing settles before its write has ended');
    // Arriving while the batch is written: the next batch, once the first ends.
    const late = group.add(10);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(writes.length, 1);
    release();
    await Promise.all([...waits, late]);
    assert.deepEqual(writes, [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10]]);
    assert.equal(settled.length, 10);
  });

  test('a batch refused for one bad item is written again item by item: only that item fails', async () => {
    const writes: string[][] = [];
    const group = new GroupCommit<string>(
      async (items) => {
        writes.push(items);
        if (items.includes('bad')) throw new Error('refused');
      },
      { isFinal, maxBatch: 100, concurrency: 1 },
    );
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((item) => group.add(item)));
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(writes, [['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });

  test('a batch that fails for the database (unreachable, an answer lost) fails every caller, and nothing is written twice', async () => {
    let writes = 0;
    const group = new GroupCommit<string>(
      async () => {
        writes++;
        throw new Error('unreachable');
      },
      { isFinal, maxBatch: 100, concurrency: 1 },
    );
    const results = await Promise.allSettled(['a', 'b', 'c'].map((item) => group.add(item)));
    assert.ok(results.every((result) => result.status === 'rejected'));
    assert.equal(writes, 1);
  });

  test('batches hold at most maxBatch items; with two writers, a batch does not wait for the one written before it', async () => {
    const { writes, held, release } = heldWrites();
    const group = new GroupCommit<number>(
      async (items) => {
        writes.push(items);
        if (items[0] === 0) await held;
      },
      { isFinal, maxBatch: 3, concurrency: 2 },
    );
    const settled: number[] = [];
    const first = [0, 1, 2, 3].map((i) => group.add(i).then(() => settled.push(i)));
    await first[3];
    assert.deepEqual(writes, [[0, 1, 2], [3]]);
    assert.deepEqual(settled, [3], 'the second batch committed while the first is still being written');
    await group.add(4);
    assert.deepEqual(writes, [[0, 1, 2], [3], [4]]);
    release();
    await Promise.all(first);
    assert.deepEqual(settled.sort(), [0, 1, 2, 3]);
  });
});

/** Makes the database refuse audit rows (all of them, or those of one tool) until the returned function is called. */
async function refuseAuditRows(service: TestService, engine: string, tool?: string): Promise<() => Promise<void>> {
  const db = service.context.db;
  if (engine === 'sqlite') {
    const when = tool ? sql` WHEN NEW.tool = ${sql.lit(tool)}` : sql``;
    await sql`CREATE TRIGGER refuse_audit BEFORE INSERT ON mcp_tool_calls${when} BEGIN SELECT RAISE(ABORT, 'audit refused'); END`.execute(db);
    return async () => void (await sql`DROP TRIGGER refuse_audit`.execute(db));
  }
  await sql`CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$`.execute(db);
  const when = tool ? sql` WHEN (NEW.tool = ${sql.lit(tool)})` : sql``;
  await sql`CREATE TRIGGER refuse_audit BEFORE INSERT ON mcp_tool_calls FOR EACH ROW${when} EXECUTE FUNCTION refuse_audit()`.execute(db);
  return async () => {
    await sql`DROP TRIGGER refuse_audit ON mcp_tool_calls`.execute(db);
    await sql`DROP FUNCTION refuse_audit()`.execute(db);
  };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`MCP calls audited by group commit on ${engine}`, skip, () => {
    let service: TestService;
    let merchantId: string;
    before(async () => {
      service = await startTestService(engine);
      ({ merchantId } = await service.merchant());
    });
    after(() => service?.stop());

    const callTool = (token: string, name: string, args: Record<string, unknown> = {}) => callMcpTool(service.app, token, name, args);
    const auditOf = async (grantId: string) => (await listToolCalls(service.context.db, merchantId, 1000)).filter((c) => c.grantId === grantId);

    test('30 concurrent calls: 30 answers, each with its own audit row', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read', 'orders:read']);
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          i % 3 === 2 ? callTool(accessToken, 'get_receipt', { publicOrderId: `TX-${i}` }) : callTool(accessToken, 'get_payment_settings'),
        ),
      );
      for (const answer of answers) assert.equal(answer.status, 200);
      assert.equal(answers.filter((answer) => answer.body.result.structuredContent?.businessName !== undefined).length, 20);
      const audited = await auditOf(grantId);
      assert.equal(audited.length, 30);
      assert.equal(audited.filter((c) => c.tool === 'get_payment_settings' && c.outcome === 'ok').length, 20);
      assert.equal(audited.filter((c) => c.tool === 'get_receipt' && c.reason === 'not_found').length, 10);
    });

    test('a commit that fails answers an error, never the result without its audit row; the next call after it is served', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const allow = await refuseAuditRows(service, engine);
      let answers: Awaited<ReturnType<typeof callTool>>[];
      try {
        answers = await Promise.all(Array.from({ length: 5 }, () => callTool(accessToken, 'get_payment_settings')));
      } finally {
        await allow();
      }
      for (const answer of answers) {
        assert.equal(answer.status, 500);
        assert.equal(answer.body?.result, undefined, 'no result without its audit row');
        assert.ok(!JSON.stringify(answer.body).includes('businessName'));
      }
      assert.deepEqual(await auditOf(grantId), []);
      const next = await callTool(accessToken, 'get_payment_settings');
      assert.equal(next.status, 200);
      assert.ok(next.body.result.structuredContent.businessName);
      assert.equal((await auditOf(grantId)).length, 1);
    });

    test('a row the database refuses fails its own call only: the calls committed beside it are answered', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const allow = await refuseAuditRows(service, engine, 'no_such_tool');
      let answers: Awaited<ReturnType<typeof callTool>>[];
      try {
        answers = await Promise.all([
          callTool(accessToken, 'get_payment_settings'),
          callTool(accessToken, 'no_such_tool'),
          callTool(accessToken, 'get_payment_settings'),
        ]);
      } finally {
        await allow();
      }
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [200, 500, 200],
      );
      const audited = await auditOf(grantId);
      assert.deepEqual(
        audited.map((c) => [c.tool, c.outcome]),
        [
          ['get_payment_settings', 'ok'],
          ['get_payment_settings', 'ok'],
        ],
      );
    });

    test('a grant revoked between calls: the very next call is refused and audited, even right after batched calls', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const answers = await Promise.all(Array.from({ length: 5 }, () => callTool(accessToken, 'get_payment_settings')));
      assert.ok(answers.every((answer) => answer.status === 200));
      await revokeGrant(service.context.db, grantId, 'merchant', Date.now(), merchantId);
      const refused = await callTool(accessToken, 'get_payment_settings');
      assert.equal(refused.status, 401);
      const audited = await auditOf(grantId);
      assert.equal(audited.length, 6);
      assert.deepEqual(
        audited.filter((c) => c.outcome === 'refused').map((c) => c.reason),
        ['grant_revoked'],
      );
    });

    test('the hourly limit under concurrent calls: the last places are all served, the overshoot stays within the calls in flight, and the next call is refused', async () => {
      const { accessToken, grantId, clientId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const now = Date.now();
      for (let i = 0; i < 290; i++)
        await recordToolCall(
          service.context.db,
          { grantId, clientId, merchantId, mode: 'sandbox', tool: 'get_payment_settings', outcome: 'ok', reason: null, arguments: {} },
          now - 60_000,
        );
      const inFlight = 30;
      const answers = await Promise.all(Array.from({ length: inFlight }, () => callTool(accessToken, 'get_payment_settings')));
      const served = answers.filter((answer) => answer.body.result !== undefined).length;
      const limited = answers.filter((answer) => answer.body.error?.code === RATE_LIMITED_CODE).length;
      assert.equal(served + limited, inFlight);
      assert.ok(served >= 10, `the 10 places left are served (${served})`);
      assert.ok(served <= 10 + inFlight - 1, `at most the calls in flight beyond the limit (${served})`);
      const next = await callTool(accessToken, 'get_payment_settings');
      assert.equal(next.body.error?.code, RATE_LIMITED_CODE, 'once they are answered, the next call is refused');
      const audited = await auditOf(grantId);
      assert.equal(audited.length, 290 + inFlight + 1, 'every call audited, refused ones included');
    });
  });
}
