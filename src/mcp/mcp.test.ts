import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { createClient } from '../oauth/clients.ts';
import { revokeGrant } from '../oauth/grants.ts';
import { issueCheckoutToken } from '../oauth/tokens.ts';
import { authorizedAgent, callMcpTool, type McpProtocol, mcpRequest } from '../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { argumentsDigest, listToolCalls, recordToolCall } from './audit.ts';
import { RATE_LIMITED_CODE } from './mcp.route.ts';

const CHALLENGE = 'Bearer resource_metadata="http://till.test/.well-known/oauth-protected-resource/mcp", scope="settings:read orders:read"';
/** RFC 6750 §3.1: a token that was sent but cannot be used is named invalid_token, beside the spec's parameters. */
const invalidTokenChallenge = (description: string) =>
  `Bearer error="invalid_token", error_description="${description}", resource_metadata="http://till.test/.well-known/oauth-protected-resource/mcp", scope="settings:read orders:read"`;

/** `Cache-Control: no-store`, or on an SSE stream `no-store, no-transform`: never kept, never rewritten on its way. */
function isNoStore(cacheControl: unknown, contentType: unknown): boolean {
  const directives = String(cacheControl ?? '')
    .split(',')
    .map((directive) => directive.trim().toLowerCase())
    .filter(Boolean)
    .sort();
  const expected = String(contentType ?? '').startsWith('text/event-stream') ? ['no-store', 'no-transform'] : ['no-store'];
  return directives.join() === expected.join();
}

for (const { engine, skip } of engines) {
  describeOnEngine(`the MCP endpoint on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    let merchantId: string;
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
      ({ merchantId } = await service.merchant());
    });
    after(() => service?.stop());

    const rpc = (token: string | undefined, method: string, params: Record<string, unknown> = {}, protocol?: McpProtocol) =>
      mcpRequest(service.app, token, method, params, protocol);
    const callTool = (token: string, name: string, args: Record<string, unknown> = {}, protocol?: McpProtocol) =>
      callMcpTool(service.app, token, name, args, protocol);
    const auditOf = async (tool: string) => (await listToolCalls(service.context.db, merchantId, 1000)).filter((c) => c.tool === tool);

    test('no token, a client-credentials token, a foreign or expired one: 401 with exactly the spec challenge', async () => {
      const client = await createClient(service.context.db, merchantId, 'sandbox');
      const checkoutToken = (await issueCheckoutToken(service.context.db, service.context.config, client, clock)).accessToken;
      const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const later = clock;
      const none = await rpc(undefined, 'tools/list');
      assert.equal(none.status, 401);
      assert.equal(none.headers['www-authenticate'], CHALLENGE, 'no token: exactly the spec challenge, no error code (RFC 6750 §3.1)');
      for (const token of [checkoutToken, 'not-a-jwt', `${accessToken.slice(0, -4)}AAAA`]) {
        const answer = await rpc(token, 'tools/list');
        assert.equal(answer.status, 401, String(token));
        assert.equal(answer.headers['www-authenticate'], invalidTokenChallenge(answer.body.error_description));
      }
      clock += 16 * 60_000;
      try {
        const expired = await rpc(accessToken, 'tools/list');
        assert.equal(expired.status, 401, 'an expired token');
        assert.equal(expired.headers['www-authenticate'], invalidTokenChallenge(expired.body.error_description));
      } finally {
        clock = later;
      }
    });

    test('only POST: GET and the other methods get 405; a browser client’s preflight is allowed', async () => {
      const preflight = await service.app.inject({
        method: 'OPTIONS',
        url: '/mcp',
        headers: { origin: 'https://inspector.example', 'access-control-request-method': 'POST' },
      });
      assert.equal(preflight.statusCode, 204);
      assert.equal(preflight.headers['access-control-allow-origin'], '*');
      assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/);
      assert.match(String((await rpc(undefined, 'tools/list')).headers['access-control-expose-headers']), /WWW-Authenticate/);
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const answer = await service.app.inject({ method, url: '/mcp' });
        assert.equal(answer.statusCode, 405, method);
        assert.equal(answer.headers.allow, 'POST');
      }
    });

    test('tools/list shows every tool whatever was granted, each naming its scope', async () => {
      const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const { body } = await rpc(accessToken, 'tools/list');
      const tools = body.result.tools as { name: string; description: string; inputSchema: { additionalProperties?: boolean } }[];
      const scopes: Record<string, string> = {
        get_payment_settings: 'settings:read',
        list_orders: 'orders:read',
        get_receipt: 'orders:read',
        list_api_keys: 'keys:read',
        create_payment_session: 'sessions:write',
        create_api_key: 'keys:write',
        list_payment_sessions: 'orders:read',
        list_refunds: 'refunds:read',
        prepare_refund: 'refunds:write',
        submit_refund: 'refunds:write',
      };
      assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(scopes).sort());
      for (const tool of tools) {
        assert.ok(tool.description.includes(scopes[tool.name]!), `${tool.name} names ${scopes[tool.name]}`);
        assert.equal(tool.inputSchema.additionalProperties, false, `${tool.name} takes no other argument`);
      }
    });

    test('a tool whose scope was not granted: 403 naming every scope needed in one challenge, audited once', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read', 'orders:read']);
      const answer = await callTool(accessToken, 'create_api_key', {});
      assert.equal(answer.status, 403);
      const challenge = answer.headers['www-authenticate'] as string;
      assert.match(challenge, /^Bearer error="insufficient_scope"/);
      assert.match(challenge, /scope="settings:read orders:read keys:write"/);
      assert.match(challenge, /resource_metadata="http:\/\/till\.test\/\.well-known\/oauth-protected-resource\/mcp"/);
      const audited = (await auditOf('create_api_key')).filter((c) => c.grantId === grantId);
      assert.equal(audited.length, 1);
      assert.equal(audited[0]!.outcome, 'refused');
      assert.equal(audited[0]!.reason, 'insufficient_scope');
      const quickstart = await rpc((await authorizedAgent(service.context, merchantId, ['orders:read'])).accessToken, 'resources/read', {
        uri: 'service://quickstart',
      });
      assert.equal(quickstart.status, 403, 'the quickstart needs settings:read');
    });

    test('an unknown argument is refused by name with what the tool accepts; nothing is done; audited once with a digest', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['orders:read']);
      const args = { publicOrderId: 'TX-unknown', verbose: true };
      const answer = await callTool(accessToken, 'get_receipt', args);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.result.isError, true);
      assert.match(answer.body.result.content[0].text, /"verbose"/);
      assert.match(answer.body.result.content[0].text, /accepts: publicOrderId/);
      const audited = (await auditOf('get_receipt')).filter((c) => c.grantId === grantId);
      assert.deepEqual(
        audited.map((c) => [c.outcome, c.reason, c.argumentsSha256]),
        [['refused', 'unknown_argument', argumentsDigest(args)]],
      );
      assert.ok(!JSON.stringify(audited).includes('TX-unknown'), 'the arguments themselves are not kept');
    });

    test('a malformed tools/call (not JSON-RPC 2.0, a fractional id, not of the protocol version asked for) is answered 400 and audited as nothing', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const cases = [
        { envelope: { jsonrpc: {}, id: 1 }, version: '2025-11-25' },
        { envelope: { jsonrpc: '2.0', id: 0.5 }, version: '2025-11-25' },
        { envelope: { jsonrpc: '2.0', id: null }, version: '2025-11-25' },
        // Well formed for 2025-11-25, but not for 2026-07-28, which the header asks for.
        { envelope: { jsonrpc: '2.0', id: 7 }, version: '2026-07-28' },
      ];
      for (const { envelope, version } of cases) {
        const answer = await service.app.inject({
          method: 'POST',
          url: '/mcp',
          headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': version },
          payload: { ...envelope, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } },
        });
        assert.equal(answer.statusCode, 400, JSON.stringify(envelope));
      }
      assert.deepEqual(
        (await auditOf('no_such_tool')).filter((c) => c.grantId === grantId),
        [],
      );
    });

    test('a revoked grant: the next call is 401, and the refused call is audited', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      assert.equal((await callTool(accessToken, 'get_payment_settings')).status, 200);
      clock += 1000;
      await revokeGrant(service.context.db, grantId, 'merchant', clock, merchantId);
      const answer = await callTool(accessToken, 'get_payment_settings');
      assert.equal(answer.status, 401);
      assert.equal(answer.headers['www-authenticate'], invalidTokenChallenge(answer.body.error_description));
      assert.match(answer.body.error_description, /revoked/);
      const audited = (await auditOf('get_payment_settings')).filter((c) => c.grantId === grantId);
      assert.deepEqual(
        audited.map((c) => [c.outcome, c.reason]),
        [
          ['refused', 'grant_revoked'],
          ['ok', null],
        ],
      );
    });

    test('every answer is kept by no cache, JSON and SSE alike, refusals and errors too', async () => {
      const { accessToken } = await authorizedAgent(service.context, merchantId, ['settings:read', 'keys:write']);
      const answers: { what: string; status: number; headers: Record<string, unknown> }[] = [];
      const transports: [McpProtocol, string][] = [
        ['2025-11-25', 'text/event-stream'],
        ['2026-07-28', 'application/json'],
      ];
      for (const [protocol, type] of transports) {
        const key = await callTool(accessToken, 'create_api_key', {}, protocol);
        assert.match(key.body.result.structuredContent.apiKey, /^sk_test_/);
        assert.ok(String(key.headers['content-type']).startsWith(type), `${protocol} answers ${type}: ${key.headers['content-type']}`);
        answers.push({ what: `create_api_key over ${type}`, ...key });
        answers.push({ what: `tools/list over ${type}`, ...(await rpc(accessToken, 'tools/list', {}, protocol)) });
        answers.push({ what: `an unknown tool over ${type}`, ...(await callTool(accessToken, 'no_such_tool', {}, protocol)) });
        answers.push({ what: `a scope not granted over ${type}`, ...(await callTool(accessToken, 'list_orders', {}, protocol)) });
        answers.push({ what: `no token over ${type}`, ...(await rpc(undefined, 'tools/list', {}, protocol)) });
      }
      const raw = async (what: string, request: InjectOptions) => {
        const answer = await service.app.inject(request);
        answers.push({ what, status: answer.statusCode, headers: answer.headers });
      };
      const auth = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' };
      await raw('accepting neither JSON nor SSE', {
        method: 'POST',
        url: '/mcp',
        headers: { ...auth, accept: 'text/plain', 'mcp-protocol-version': '2025-11-25' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      });
      await raw('a body that is no JSON', { method: 'POST', url: '/mcp', headers: { ...auth, accept: 'application/json, text/event-stream' }, payload: '{' });
      await raw('GET', { method: 'GET', url: '/mcp' });
      assert.deepEqual(
        answers
          .filter((answer) => !isNoStore(answer.headers['cache-control'], answer.headers['content-type']))
          .map(({ what, status, headers }) => ({ what, status, cacheControl: headers['cache-control'] })),
        [],
        'every /mcp answer: Cache-Control no-store (an SSE stream: no-store, no-transform)',
      );
      assert.deepEqual(
        new Set(answers.map((answer) => answer.status)),
        new Set([200, 401, 403, 400, 406, 405]),
        'successes, refusals and errors were all seen',
      );
    });

    /** A JSON-RPC batch (an array body) as a 2025-era client would post it. */
    const postBatch = (token: string, messages: unknown[]) =>
      service.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        payload: JSON.stringify(messages),
      });
    const toolCall = (id: number, name: string, args: Record<string, unknown> = {}) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args },
    });

    test('a JSON-RPC batch is refused as an Invalid Request (-32600): none of its calls runs, whatever they are', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read', 'keys:write']);
      const keysBefore = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      const answer = await postBatch(accessToken, [toolCall(1, 'get_payment_settings'), toolCall(2, 'create_api_key'), toolCall(3, 'set_wallet')]);
      assert.equal(answer.statusCode, 400, answer.body);
      const body = answer.json();
      assert.equal(body.jsonrpc, '2.0');
      assert.equal(body.id, null);
      assert.equal(body.error.code, -32600);
      assert.match(body.error.message, /batch/i);
      const keysAfter = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(keysAfter.length, keysBefore.length, 'no key was made');
      const audited = (await listToolCalls(service.context.db, merchantId, 1000)).filter((c) => c.grantId === grantId);
      assert.deepEqual(audited, [], 'nothing ran, so there is nothing to audit');
      // One call in a one-element array is a batch too.
      assert.equal((await postBatch(accessToken, [toolCall(4, 'get_payment_settings')])).statusCode, 400);
    });

    test('after the 300th call of the hour, a batch runs nothing: not a way around the limit or the audit', async () => {
      const { accessToken, grantId, clientId } = await authorizedAgent(service.context, merchantId, ['settings:read', 'keys:write']);
      for (let i = 0; i < 300; i++)
        await recordToolCall(
          service.context.db,
          { grantId, clientId, merchantId, mode: 'sandbox', tool: 'get_payment_settings', outcome: 'ok', reason: null, arguments: {} },
          clock - 1000,
        );
      const single = await callTool(accessToken, 'get_payment_settings');
      assert.equal(single.body.error.code, RATE_LIMITED_CODE, 'the 301st single call is refused');
      const before = await listToolCalls(service.context.db, merchantId, 1000);
      const keysBefore = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      const answer = await postBatch(accessToken, [toolCall(1, 'get_payment_settings'), toolCall(2, 'create_api_key'), toolCall(3, 'no_such_tool')]);
      assert.equal(answer.statusCode, 400, answer.body);
      assert.equal(answer.json().error.code, -32600);
      const after = await listToolCalls(service.context.db, merchantId, 1000);
      assert.equal(after.length, before.length, 'no call of the batch ran or was recorded as run');
      const keys = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(keys.length, keysBefore.length, 'create_api_key did not run');
    });

    test('the 301st tool call in an hour is a JSON-RPC error with the seconds to wait, audited; an hour later calls go through', async () => {
      const { accessToken, grantId } = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const start = clock;
      try {
        for (let i = 0; i < 300; i++) {
          clock = start + i * 1000;
          const answer = await callTool(accessToken, 'get_payment_settings');
          assert.equal(answer.body.result?.isError, undefined, `call ${i + 1}`);
        }
        clock = start + 300 * 1000;
        const refused = await callTool(accessToken, 'get_payment_settings');
        assert.equal(refused.body.error.code, RATE_LIMITED_CODE);
        assert.equal(refused.body.error.data.retryAfterSeconds, 3600 - 300);
        assert.equal(refused.headers['retry-after'], String(3600 - 300));
        const audited = (await listToolCalls(service.context.db, merchantId, 1000)).filter((c) => c.grantId === grantId);
        assert.equal(audited.filter((c) => c.reason === 'rate_limited').length, 1);
        clock = start + 3600 * 1000 + 1;
        assert.equal((await callTool(accessToken, 'get_payment_settings')).body.result?.isError, undefined);
      } finally {
        clock = start;
      }
    });
  });
}
