import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { listToolCalls } from '../src/mcp/audit.ts';
import { TOOLS } from '../src/mcp/tools.ts';
import { type AuthorizedAgent, authorizedAgent } from '../src/testing/agent.ts';
import { createServiceStorage } from '../src/testing/environment.ts';
import { describeOnEngine, engines } from '../src/testing/harness.ts';
import { createMerchant } from '../src/testing/shop.ts';
import { startService, stopService } from './fixtures/crashable-service.ts';

/**
 * Every MCP tool that writes, each with a call that succeeds and a count of what it made: the
 * service is SIGKILLed once the tool has run and before its answer, and after a restart what the
 * tool made exists only with its audit row, or neither does.
 */
const WRITING_TOOLS: { name: string; args: Record<string, unknown>; made: (db: DatabaseHandle['db'], merchantId: string) => Promise<number> }[] = [
  {
    name: 'create_payment_session',
    args: { amount: 12.5, currency: 'USD' },
    made: async (db, merchantId) =>
      (await db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).where('created_via', '=', 'mcp').execute()).length,
  },
  {
    name: 'create_api_key',
    args: {},
    // The merchant was made with one key of its own.
    made: async (db, merchantId) => (await db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute()).length - 1,
  },
];

/**
 * Tools with a write scope that this test does not crash, each with why. A new writing tool must be
 * in one list or the other.
 */
const NOT_CRASHED: Record<string, string> = {
  prepare_refund: 'writes nothing: it answers the typed data the payout wallet signs',
  submit_refund:
    'makes its refund in the refund flow’s own transaction (chain/refunds.ts) and writes its audit row after it (docs/mcp.md): not yet one transaction, so not yet crashed here',
};

for (const { engine, skip } of engines) {
  describeOnEngine(`an MCP tool's effect and its audit survive a crash together on ${engine}`, skip, () => {
    let storage: Awaited<ReturnType<typeof createServiceStorage>>;
    let handle: DatabaseHandle;
    let env: Record<string, string>;
    let merchantId: string;
    let agent: AuthorizedAgent;

    before(async () => {
      storage = await createServiceStorage(engine, { prefix: 'till-mcp-crash-' });
      env = { ...(process.env as Record<string, string>), PORT: '0', ...storage.settings, TILL_BASE_URL: 'http://till.test', TILL_LOG_LEVEL: 'silent' };
      const config = loadConfig(env);
      handle = openDatabase(config);
      await migrateToLatest(handle.db);
      ({ merchantId } = await createMerchant(handle.db, { name: 'Agent shop' }));
      agent = await authorizedAgent({ db: handle.db, config, now: Date.now }, merchantId, ['sessions:write', 'keys:write']);
    });
    after(async () => {
      await handle?.close();
      await storage?.drop();
    });

    const callTool = (url: string, name: string, args: Record<string, unknown>) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.accessToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
      });

    const auditedSuccesses = async (tool: string) =>
      (await listToolCalls(handle.db, merchantId, 1000)).filter((call) => call.grantId === agent.grantId && call.tool === tool && call.outcome === 'ok').length;

    test('killed after a writing tool ran, before its answer: after a restart what it made exists only with its audit row', async () => {
      assert.deepEqual(
        [...WRITING_TOOLS.map((tool) => tool.name), ...Object.keys(NOT_CRASHED)].sort(),
        TOOLS.filter((tool) => tool.scope.endsWith(':write'))
          .map((tool) => tool.name)
          .sort(),
        'every tool needing a write scope is crashed here, or says why not',
      );
      for (const tool of WRITING_TOOLS) {
        const killed = await startService(env, 'mcp:after-tool');
        await assert.rejects(callTool(killed.url, tool.name, tool.args), `${tool.name}: the agent sees the connection drop`);
        assert.equal(await killed.exited, 'SIGKILL');
        assert.match(killed.stderr(), /killed:mcp:after-tool/);
      }

      const restarted = await startService(env);
      try {
        const found = [];
        for (const tool of WRITING_TOOLS)
          found.push({ tool: tool.name, made: await tool.made(handle.db, merchantId), audited: await auditedSuccesses(tool.name) });
        // The tool ran to its end before the kill, so what it made is there — with its audit row.
        assert.deepEqual(
          found,
          WRITING_TOOLS.map((tool) => ({ tool: tool.name, made: 1, audited: 1 })),
        );
        // The restarted service answers and audits the next call as any other.
        const next = await callTool(restarted.url, 'create_payment_session', { amount: 3, currency: 'USD' });
        assert.equal(next.status, 200);
        assert.equal(await auditedSuccesses('create_payment_session'), 2);
      } finally {
        await stopService(restarted);
      }
    });
  });
}
