// `till mcp login` end to end, as a newcomer runs it: the command discovers the authorization
// server from the MCP endpoint, serves its own Client ID Metadata Document on loopback, prints the
// consent URL; the merchant signs in and allows in a browser (played over HTTP); the command gets
// the code on its loopback redirect, exchanges it, and prints an access token that works on /mcp,
// in the MCP Inspector command it prints.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { createUser } from '../src/accounts/users.ts';
import { inspectorCommand, MCP_INSPECTOR } from '../src/cli/mcp.ts';
import { listGrants } from '../src/oauth/grants.ts';
import { mcpRequest } from '../src/testing/agent.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { temporaryDirectories } from '../src/testing/environment.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../src/testing/harness.ts';
import { merchantAtConsent } from '../src/testing/oauth-flow.ts';
import { MCP_INSPECTOR_CLI } from '../src/testing/tools.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');
const PASSWORD = 'correct horse battery staple';
const temporaryDirectory = temporaryDirectories('till-mcp-login-');

/** `till mcp login …` as a developer runs it in a fresh directory, with no TILL_* settings; resolves when the consent URL is printed. */
function startLogin(args: string[]) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT'));
  const child = spawn(process.execPath, [CLI, 'mcp', 'login', '--no-open', ...args], {
    cwd: temporaryDirectory(),
    env: { ...clean, HOME: temporaryDirectory() },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => child.on('close', (code) => done({ code, stdout, stderr })));
  const consentUrl = new Promise<string | undefined>((found) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      // The whole line: a chunk may end inside the URL.
      const url = /^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)\n/m.exec(stderr)?.[1];
      if (url) found(url);
    });
    child.on('close', () => found(undefined));
  });
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  return { consentUrl, exited };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`till mcp login on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let email: string;
    let merchantId: string;
    before(async () => {
      service = await startListeningTestService(engine, { TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' });
      ({ merchantId } = await service.merchant({ name: 'Login Shop' }));
      email = `login-${engine}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
    });
    after(() => service?.stop());

    test('the code flow with PKCE through a loopback redirect gives an access token that works on /mcp and in the printed Inspector command', async () => {
      const login = startLogin(['--url', service.baseUrl]);
      const url = await login.consentUrl;
      if (!url) assert.fail(`no consent URL printed: ${(await login.exited).stderr}`);
      const authorization = new URL(url);
      assert.equal(authorization.origin, service.baseUrl);
      const clientId = authorization.searchParams.get('client_id') ?? '';
      assert.match(clientId, /^http:\/\/127\.0\.0\.1:\d+\/client\.json$/);
      assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authorization.searchParams.get('resource'), `${service.baseUrl}/mcp`);
      assert.equal(authorization.searchParams.get('scope'), 'settings:read orders:read');

      // The merchant signs in and allows; the browser is sent back to the command's loopback redirect.
      const { consentPage, callback } = await merchantAtConsent(service.baseUrl, email, PASSWORD)(url);
      assert.match(consentPage, /till mcp login/);
      assert.equal(`${callback.origin}${callback.pathname}`, clientId.replace('/client.json', '/callback'));
      const landing = await fetch(callback);
      assert.equal(landing.status, 200);
      assert.match(await landing.text(), /Authorized/);

      const { code, stdout, stderr } = await login.exited;
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^Authorized for http:\/\/127\.0\.0\.1:\d+\/mcp with the scopes: settings:read orders:read, on test data\.$/m);
      const accessToken = /^(eyJ[\w-]+\.[\w-]+\.[\w-]+)$/m.exec(stdout)?.[1];
      assert.ok(accessToken, stdout);

      const listed = await mcpRequest(service.app, accessToken, 'tools/list');
      assert.equal(listed.status, 200);
      assert.equal(listed.body.result.tools.length, 10);

      // The Inspector command it prints, run as printed (through the Inspector's own launcher rather than npx).
      // It is the command src/mcp/inspector.test.ts runs through npx on Node 20.
      assert.ok(stdout.includes(`  ${inspectorCommand(`${service.baseUrl}/mcp`, accessToken)}\n`), stdout);
      const printed = new RegExp(`npx -y ${MCP_INSPECTOR} (--cli \\S+ --transport http --header "Authorization: Bearer \\S+" --method tools/list)`).exec(
        stdout,
      )?.[1];
      assert.ok(printed, stdout);
      const args = printed.match(/"[^"]*"|\S+/g)!.map((arg) => arg.replace(/^"|"$/g, ''));
      const home = temporaryDirectory();
      const inspected = await runNodeScript(MCP_INSPECTOR_CLI, args, {
        env: { ...process.env, HOME: home, MCP_CATALOG_PATH: `${home}/mcp.json`, NO_COLOR: '1' },
        timeoutMs: 60_000,
      });
      assert.equal(inspected.code, 0, inspected.stderr);
      assert.equal(JSON.parse(inspected.stdout).tools.length, 10);
    });

    test('--json prints the token and its details for scripts; the grant is the merchant’s, named after the command', async () => {
      const login = startLogin(['--url', `${service.baseUrl}/mcp`, '--json', '--scope', 'settings:read']);
      const url = await login.consentUrl;
      if (!url) assert.fail(`no consent URL printed: ${(await login.exited).stderr}`);
      const { callback } = await merchantAtConsent(service.baseUrl, email, PASSWORD)(url);
      await fetch(callback);
      const { code, stdout, stderr } = await login.exited;
      assert.equal(code, 0, stderr);
      const printed = JSON.parse(stdout);
      assert.equal(printed.mcp_url, `${service.baseUrl}/mcp`);
      assert.equal(printed.scope, 'settings:read');
      assert.equal(printed.token_type, 'Bearer');
      assert.match(printed.refresh_token, /^rt_/);
      const settings = await mcpRequest(service.app, printed.access_token, 'tools/call', { name: 'get_payment_settings', arguments: {} });
      assert.equal(settings.body.result.structuredContent.businessName, 'Login Shop');
      const grant = (await listGrants(service.context.db, merchantId)).find((g) => g.clientId === printed.client_id);
      assert.equal(grant?.clientName, 'till mcp login (development client)');
      assert.deepEqual(grant?.scopes, ['settings:read']);
    });

    test('a denial at consent ends the command with the reason, and no token', async () => {
      const login = startLogin(['--url', service.baseUrl]);
      const url = await login.consentUrl;
      assert.ok(url);
      // The merchant denies: the browser carries error=access_denied back to the command.
      const { callback } = await merchantAtConsent(service.baseUrl, email, PASSWORD)(url, undefined, 'deny');
      assert.equal(callback.searchParams.get('error'), 'access_denied');
      assert.equal((await fetch(callback)).status, 400);
      const { code, stdout, stderr } = await login.exited;
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.match(stderr, /authorization refused: access_denied \(the merchant denied access\)/);
    });
  });
}

describeOnEngine('till mcp login against a service without the development flag', false, () => {
  let service: TestService & { baseUrl: string };
  before(async () => {
    service = await startListeningTestService('sqlite');
  });
  after(() => service?.stop());

  test('is refused at once, naming TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS', async () => {
    const login = startLogin(['--url', service.baseUrl]);
    assert.equal(await login.consentUrl, undefined);
    const { code, stdout, stderr } = await login.exited;
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /an http URL on this machine, accepted only for local development/);
    assert.match(stderr, /start the service with TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS=true/);
  });
});
