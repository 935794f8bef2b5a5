// The MCP Inspector's CLI mode (@modelcontextprotocol/inspector, `--cli`) against the real
// service over HTTP with a bearer token, as docs/mcp.md tells a developer to run it: it lists the
// tools, calls a read tool, reads the quickstart, and is refused without a token. SQLite only: what
// is tested is the protocol as the Inspector speaks it, which does not depend on the engine.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { inspectorCommand, MCP_INSPECTOR } from '../cli/mcp.ts';
import { revokeGrant } from '../oauth/grants.ts';
import { authorizedAgent } from '../testing/agent.ts';
import { runNodeScript, runShellCommand, type ScriptRun } from '../testing/child-process.ts';
import { temporaryDirectories } from '../testing/environment.ts';
import { startListeningTestService, type TestService } from '../testing/harness.ts';
import { MCP_INSPECTOR_CLI } from '../testing/tools.ts';
import { TOOLS } from './tools.ts';

const temporaryDirectory = temporaryDirectories('till-inspector-');

/**
 * `mcp-inspector --cli URL --transport http …`. HOME is a temporary directory so that the
 * Inspector's catalog and secret store never touch the user's.
 */
function inspector(args: string[]): Promise<ScriptRun> {
  const home = temporaryDirectory();
  return runNodeScript(MCP_INSPECTOR_CLI, ['--cli', ...args], {
    env: { ...process.env, HOME: home, MCP_CATALOG_PATH: `${home}/mcp.json`, NO_COLOR: '1' },
    timeoutMs: 60_000,
  });
}

const json = (run: ScriptRun) => {
  assert.equal(run.code, 0, `the Inspector failed (exit ${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout);
};

describe('the MCP Inspector CLI with a bearer token', () => {
  let service: TestService & { baseUrl: string };
  let url: string;
  let merchantId: string;
  before(async () => {
    service = await startListeningTestService('sqlite');
    url = `${service.baseUrl}/mcp`;
    ({ merchantId } = await service.merchant({ name: 'Inspected Shop' }));
  });
  after(() => service?.stop());

  const withToken = (token: string, ...args: string[]) => inspector([url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args]);

  test('tools/list lists every tool; tools/call runs get_payment_settings; resources/read gives the quickstart', async () => {
    const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read', 'orders:read']);

    const listed = json(await withToken(accessToken, '--method', 'tools/list'));
    assert.deepEqual(
      listed.tools.map((tool: { name: string }) => tool.name),
      [
        'get_payment_settings',
        'list_orders',
        'list_payment_sessions',
        'get_receipt',
        'list_api_keys',
        'create_payment_session',
        'create_api_key',
        'list_refunds',
        'prepare_refund',
        'submit_refund',
      ],
    );

    const called = json(await withToken(accessToken, '--method', 'tools/call', '--tool-name', 'get_payment_settings'));
    assert.notEqual(called.isError, true, JSON.stringify(called));
    assert.equal(called.structuredContent.businessName, 'Inspected Shop');
    assert.deepEqual(called.structuredContent.chains, [{ name: 'base', tokens: ['USDC'], payoutAddressConfigured: false }]);
    assert.deepEqual(JSON.parse(called.content[0].text), called.structuredContent);

    const orders = json(await withToken(accessToken, '--method', 'tools/call', '--tool-name', 'list_orders', '--tool-arg', 'page=1', 'size=5'));
    assert.notEqual(orders.isError, true, JSON.stringify(orders));
    assert.equal(orders.structuredContent.hasMore, false);

    const quickstart = json(await withToken(accessToken, '--method', 'resources/read', '--uri', 'service://quickstart'));
    assert.equal(quickstart.contents[0].mimeType, 'text/markdown');
    assert.match(quickstart.contents[0].text, /\/api\/checkout\/v2/);
  });

  test('an unknown argument is refused by name, in the tool result the Inspector prints', async () => {
    const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read']);
    const run = await withToken(accessToken, '--method', 'tools/call', '--tool-name', 'get_payment_settings', '--tool-arg', 'wallet=0xabc');
    assert.equal(run.code, 5, `the Inspector exits 5 on a tool result with isError: ${run.stderr}`);
    const called = JSON.parse(run.stdout);
    assert.equal(called.isError, true);
    assert.match(called.content[0].text, /refused the unknown argument "wallet"; nothing was done/);
  });

  test('without a token, or with a revoked one, the Inspector cannot connect', async () => {
    const none = await inspector([url, '--transport', 'http', '--method', 'tools/list']);
    assert.notEqual(none.code, 0, none.stdout);
    assert.match(none.stderr, /401|unauthori[sz]ed|auth/i);

    const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
    assert.equal((await withToken(accessToken, '--method', 'tools/list')).code, 0);
    await revokeGrant(service.context.db, grantId, 'merchant', Date.now(), merchantId);
    const revoked = await withToken(accessToken, '--method', 'tools/list');
    assert.notEqual(revoked.code, 0, revoked.stdout);
    assert.match(revoked.stderr, /401|unauthori[sz]ed|auth/i);
  });
});

/**
 * The oldest Node the README supports (20), as a developer has it system-wide: TILL_TEST_NODE20, or
 * /usr/bin/node when that is a Node 20. The suite itself runs on the project's Node 24.
 */
function node20(): string | undefined {
  const candidate = process.env.TILL_TEST_NODE20 ?? '/usr/bin/node';
  if (!existsSync(candidate)) return undefined;
  return execFileSync(candidate, ['--version'], { encoding: 'utf8' }).startsWith('v20.') ? candidate : undefined;
}

const NODE20 = node20();

describe('the Inspector command till mcp login prints and docs/mcp.md shows', () => {
  test('pins the Inspector the test suite installs, in every command of docs/mcp.md', () => {
    const tool = JSON.parse(readFileSync(new URL('../../test/tools/mcp-inspector/package.json', import.meta.url), 'utf8'));
    assert.equal(`@modelcontextprotocol/inspector@${tool.dependencies['@modelcontextprotocol/inspector']}`, MCP_INSPECTOR);
    const docs = readFileSync(new URL('../../docs/mcp.md', import.meta.url), 'utf8');
    const commands = docs.match(/npx [^\n`]*@modelcontextprotocol\/inspector[^\s`]*/g) ?? [];
    assert.ok(commands.length >= 5, 'docs/mcp.md shows the Inspector commands');
    for (const command of commands) assert.equal(command, `npx -y ${MCP_INSPECTOR}`);
  });

  test('runs as printed, through npx, on Node 20', { skip: NODE20 ? false : 'no Node 20 here (set TILL_TEST_NODE20 to one)' }, async () => {
    const service = await startListeningTestService('sqlite');
    try {
      const { merchantId } = await service.merchant({ name: 'Node 20 Shop' });
      const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read', 'orders:read']);
      // Node 20's npx and node first on PATH, npm's own settings of this run left out; npm's cache is
      // kept between runs so only the first one downloads the Inspector.
      const cache = join(tmpdir(), 'till-test-npx-cache');
      mkdirSync(cache, { recursive: true });
      const home = temporaryDirectory();
      const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
      const run = await runShellCommand(inspectorCommand(`${service.baseUrl}/mcp`, accessToken), {
        env: {
          ...env,
          PATH: `${dirname(NODE20!)}:${process.env.PATH}`,
          HOME: home,
          npm_config_cache: cache,
          MCP_CATALOG_PATH: `${home}/mcp.json`,
          NO_COLOR: '1',
        },
        timeoutMs: 300_000,
      });
      assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
      assert.deepEqual(
        JSON.parse(run.stdout).tools.map((tool: { name: string }) => tool.name),
        TOOLS.map((tool) => tool.name),
      );
    } finally {
      await service.stop();
    }
  });
});
