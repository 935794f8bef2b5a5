// The official MCP client SDKs, v2 (@modelcontextprotocol/client, protocol 2026-07-28) and v1
// (@modelcontextprotocol/sdk, 2025-11-25), against the real service over HTTP, each with its own
// OAuth support: a Client ID Metadata Document served here, the merchant's sign-in and consent
// driven over HTTP, tools and the quickstart, a 403 insufficient_scope on create_api_key and the
// step-up, then the grant revoked and the next call refused with 401.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { auth as authV1, UnauthorizedError as UnauthorizedErrorV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV1, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createUser } from '../accounts/users.ts';
import { listGrants, revokeGrant } from '../oauth/grants.ts';
import { AgentAuth, type Exchange, recordingFetch } from '../testing/agent-auth.ts';
import { type DocumentServer, startDocumentServer } from '../testing/document-server.ts';
import { freePort } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { merchantAtConsent, serveAgentDocument } from '../testing/oauth-flow.ts';

const PASSWORD = 'correct horse battery staple';
const BUSINESS = 'Harbour Coffee Roasters';
const TOOLS = [
  'create_api_key',
  'create_payment_session',
  'get_payment_settings',
  'get_receipt',
  'list_api_keys',
  'list_orders',
  'list_payment_sessions',
  'list_refunds',
  'prepare_refund',
  'submit_refund',
];

/** Both SDKs' clients, as far as this test uses them. */
type McpClient = {
  listTools(): Promise<{ tools: { name: string }[] }>;
  readResource(request: { uri: string }): Promise<{ contents: unknown[] }>;
  callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
};

async function assertToolsAndQuickstart(mcp: McpClient) {
  assert.deepEqual((await mcp.listTools()).tools.map((t) => t.name).sort(), TOOLS);
  const quickstart = await mcp.readResource({ uri: 'service://quickstart' });
  assert.match((quickstart.contents[0] as { text: string }).text, new RegExp(BUSINESS));
}

const createApiKey = async (mcp: McpClient) =>
  ((await mcp.callTool({ name: 'create_api_key', arguments: {} })) as { structuredContent: { apiKey: string } }).structuredContent.apiKey;

const outcomes = (exchanges: Exchange[]) => exchanges.map((e) => `${e.path} ${e.status}`);

for (const { engine, skip } of engines) {
  describeOnEngine(`the official MCP client SDKs through OAuth on ${engine}`, skip, () => {
    let service: TestService;
    let site: DocumentServer;
    let base: string;
    let merchantId: string;
    let email: string;
    before(async () => {
      site = await startDocumentServer();
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      service = await startTestService(engine, { TILL_BASE_URL: base, TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' });
      await service.app.listen({ port, host: '127.0.0.1' });
      ({ merchantId } = await service.merchant({ name: BUSINESS }));
      email = `owner-sdk-${engine}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
    });
    after(async () => {
      await service?.stop();
      await site?.close();
    });

    /** A new agent (its own metadata document, so its own grant) and the merchant's browser for it. */
    const newAgent = (slug: string, name: string) => {
      const agent = serveAgentDocument(site, slug, name);
      return { agent, auth: new AgentAuth({ ...agent, issuer: base }, merchantAtConsent(base, email, PASSWORD)) };
    };
    const insufficientScope = () =>
      `Bearer error="insufficient_scope", error_description="create_api_key needs the scope keys:write", scope="settings:read orders:read keys:write", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`;
    const revokeGrantOf = async (clientId: string) => {
      const grant = (await listGrants(service.context.db, merchantId)).find((g) => g.clientId === clientId);
      assert.ok(grant, `no grant for ${clientId}`);
      assert.ok(await revokeGrant(service.context.db, grant.id, 'merchant', Date.now(), merchantId));
    };

    test('SDK v2 (2026-07-28): OAuth, tools, quickstart, 403 then an automatic step-up, and 401 after revocation', async () => {
      const { agent, auth } = newAgent('sdk-v2', 'SDK v2 agent');
      const exchanges: Exchange[] = [];
      const transport = () => new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth, fetch: recordingFetch(exchanges) });
      const client = () => new Client({ name: 'sdk-v2-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });

      // No token: 401, discovery, and the merchant is sent to consent to the default scopes.
      const first = transport();
      await assert.rejects(client().connect(first), UnauthorizedError);
      assert.equal(auth.requestedScope(), 'settings:read orders:read');
      assert.equal(auth.authorizationUrls[0]?.searchParams.get('client_id'), agent.clientId);
      assert.ok(site.requestsTo('/sdk-v2/client.json') > 0, 'the authorization server read the metadata document');
      await first.finishAuth(auth.callback!.searchParams);
      assert.equal(auth.grantedScope, 'settings:read orders:read');

      const connection = transport();
      const mcp = client();
      await mcp.connect(connection);
      assert.equal(mcp.getNegotiatedProtocolVersion(), '2026-07-28');
      await assertToolsAndQuickstart(mcp);

      // create_api_key needs keys:write: 403, and the SDK re-authorizes at once with the challenged
      // scopes (no refresh: a refresh cannot widen a grant), stopping for the merchant's consent.
      let seen = exchanges.length;
      await assert.rejects(mcp.callTool({ name: 'create_api_key', arguments: {} }), UnauthorizedError);
      assert.deepEqual(outcomes(exchanges.slice(seen)), ['/mcp 403']);
      assert.equal(exchanges.at(-1)?.challenge, insufficientScope());
      assert.equal(auth.authorizationUrls.length, 2);
      assert.equal(auth.requestedScope(), 'settings:read orders:read keys:write');
      await connection.finishAuth(auth.callback!.searchParams);
      assert.equal(auth.grantedScope, 'settings:read orders:read keys:write');
      assert.match(await createApiKey(mcp), /^sk_test_/);

      // Revoked: the next call gets 401, the refresh token is refused, and the merchant is asked again.
      await revokeGrantOf(agent.clientId);
      seen = exchanges.length;
      await assert.rejects(mcp.listTools(), UnauthorizedError);
      assert.deepEqual(outcomes(exchanges.slice(seen)), ['/mcp 401', '/oauth/token 400']);
      assert.equal(auth.authorizationUrls.length, 3);
      assert.equal(auth.tokens(), undefined);
      await mcp.close();
    });

    test('SDK v1 (2025-11-25): OAuth, tools, quickstart, 403 (its step-up only refreshes), step-up by the agent, and 401 after revocation', async () => {
      const { agent, auth } = newAgent('sdk-v1', 'SDK v1 agent');
      const exchanges: Exchange[] = [];
      const mcpUrl = new URL(`${base}/mcp`);
      const transport = () => new StreamableHTTPClientTransportV1(mcpUrl, { authProvider: auth, fetch: recordingFetch(exchanges) });
      const client = () => new ClientV1({ name: 'sdk-v1-agent', version: '1.0.0' });

      // No token: 401, and the merchant is sent to consent to the default scopes.
      const first = transport();
      await assert.rejects(client().connect(first), UnauthorizedErrorV1);
      assert.equal(auth.requestedScope(), 'settings:read orders:read');
      assert.ok(site.requestsTo('/sdk-v1/client.json') > 0, 'the authorization server read the metadata document');
      await first.finishAuth(auth.code);
      assert.equal(auth.grantedScope, 'settings:read orders:read');

      const connection = transport();
      const mcp = client();
      await mcp.connect(connection);
      assert.equal(connection.protocolVersion, '2025-11-25');
      await assertToolsAndQuickstart(mcp);

      // 403: v1 answers the challenge by refreshing its token, which cannot widen the grant, so it
      // gets the same 403 and gives up (typescript-sdk issue #2255).
      let seen = exchanges.length;
      await assert.rejects(
        mcp.callTool({ name: 'create_api_key', arguments: {} }),
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 403,
      );
      assert.deepEqual(outcomes(exchanges.slice(seen)), ['/mcp 403', '/oauth/token 200', '/mcp 403']);
      assert.equal(exchanges.at(-1)?.challenge, insufficientScope());
      assert.equal(auth.authorizationUrls.length, 1);
      // The agent steps up itself: the SDK's auth() with the challenged scopes, without the refresh token.
      auth.forgetRefreshToken();
      assert.equal(await authV1(auth, { serverUrl: mcpUrl, scope: 'settings:read orders:read keys:write' }), 'REDIRECT');
      assert.equal(auth.requestedScope(), 'settings:read orders:read keys:write');
      await connection.finishAuth(auth.code);
      assert.equal(auth.grantedScope, 'settings:read orders:read keys:write');
      assert.match(await createApiKey(mcp), /^sk_test_/);

      // Revoked: the same as v2, 401, the refresh refused, and the merchant asked again.
      await revokeGrantOf(agent.clientId);
      seen = exchanges.length;
      await assert.rejects(mcp.listTools(), UnauthorizedErrorV1);
      assert.deepEqual(outcomes(exchanges.slice(seen)), ['/mcp 401', '/oauth/token 400']);
      assert.equal(auth.authorizationUrls.length, 3);
      assert.equal(auth.tokens(), undefined);
      await mcp.close();
    });
  });
}
