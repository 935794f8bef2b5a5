// Every credential carries the mode it was made in: client credentials, coding agents' grants, their
// refresh and access tokens, and their MCP calls act on that mode's data only, and are refused (named)
// by a deployment that does not serve it. One database is served in turn by deployments of different
// modes, as an operator's going live leaves it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { Mode } from '../common/modes.ts';
import { loadConfig } from '../config.ts';
import { createService, type Service } from '../main.ts';
import { listToolCalls } from '../mcp/audit.ts';
import { authorizedAgent, callMcpTool } from '../testing/agent.ts';
import { createServiceStorage } from '../testing/environment.ts';
import { describeOnEngine, engines, LIVE_STAND_INS } from '../testing/harness.ts';
import { createMerchant } from '../testing/shop.ts';
import { createClient, type IssuedClient } from './clients.ts';
import { issueGrantSecret } from './grant-secrets.ts';

/** The settings of a deployment that serves live (a facilitator; stand-ins on this machine). */
const LIVE = { ...LIVE_STAND_INS, TILL_FACILITATOR_URL: 'http://127.0.0.1:9' };
const ALLOW_LOOPBACK = { TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' };
/** An agent under development: its client_id is an http URL on this machine. */
const DEVELOPMENT_CLIENT = 'http://127.0.0.1:8976/client.json';
const AGENT_SCOPES = ['keys:read', 'keys:write', 'sessions:write'] as const;

for (const { engine, skip } of engines) {
  describeOnEngine(`credentials carry their mode on ${engine}`, skip, () => {
    let storage: Awaited<ReturnType<typeof createServiceStorage>>;
    let service: Service | undefined;
    before(async () => {
      storage = await createServiceStorage(engine);
    });
    after(async () => {
      await service?.close();
      await storage?.drop();
    });

    /** The deployment serving the database from now on, serving `modes` (one at a time, as an operator runs them). */
    const deploy = async (modes: Mode[], env: Record<string, string> = {}): Promise<Service> => {
      await service?.close();
      const config = loadConfig({ ...storage.settings, TILL_LOG_LEVEL: 'silent', PORT: '0', TILL_BASE_URL: 'https://till.test', ...env });
      service = await createService({ ...config, modes }, { log: pino({ level: 'silent' }), workers: false });
      return service;
    };

    const post = (s: Service, url: string, payload: Record<string, string>) =>
      s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(payload).toString() });
    const clientToken = (s: Service, client: IssuedClient) =>
      post(s, '/oauth/token', {
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: 'https://till.test/checkout',
      });
    const refresh = (s: Service, clientId: string, refreshToken: string) =>
      post(s, '/oauth/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });
    const createSession = (s: Service, authorization: Record<string, string>) =>
      s.app.inject({
        method: 'POST',
        url: '/api/checkout/v2/payment_session',
        headers: { 'content-type': 'application/json', ...authorization },
        payload: { amount: 5, currency: 'USD' },
      });
    const sessionsOf = async (s: Service, merchantId: string) =>
      (await s.context.db.selectFrom('payment_sessions').select('mode').where('merchant_id', '=', merchantId).execute()).map((row) => row.mode);
    const keysOf = async (s: Service, merchantId: string) =>
      (await s.context.db.selectFrom('api_keys').select('mode').where('merchant_id', '=', merchantId).execute()).map((row) => row.mode).sort();
    /** An agent's grant in `mode` and a refresh token of it, as the consent screen and code exchange leave them. */
    const agentWithRefreshToken = async (s: Service, merchantId: string, mode: Mode, clientId?: string) => {
      const agent = await authorizedAgent(s.context, merchantId, [...AGENT_SCOPES], clientId, mode);
      const refreshToken = await issueGrantSecret(s.context.db, 'refresh_token', { grantId: agent.grantId, clientId: agent.clientId }, Date.now());
      return { ...agent, refreshToken };
    };

    test('made in the sandbox, a client, a grant and a development client’s refresh token all stop once the deployment serves live only', async () => {
      let s = await deploy(['sandbox'], ALLOW_LOOPBACK);
      const { merchantId, apiKey: testKey } = await createMerchant(s.context.db, { keyMode: 'test' });
      const client = await createClient(s.context.db, merchantId, 'sandbox');
      const issued = await clientToken(s, client);
      assert.equal(issued.statusCode, 200, issued.body);
      const bearer = { authorization: `Bearer ${issued.json().access_token}` };
      assert.equal(decodeJwt(issued.json().access_token).mode, 'test', 'the token names its mode');
      assert.equal((await createSession(s, bearer)).statusCode, 201, 'in the sandbox, the client works');
      const agent = await agentWithRefreshToken(s, merchantId, 'sandbox');
      const developer = await agentWithRefreshToken(s, merchantId, 'sandbox', DEVELOPMENT_CLIENT);
      const rotated = await refresh(s, DEVELOPMENT_CLIENT, developer.refreshToken);
      assert.equal(rotated.statusCode, 200, rotated.body);

      s = await deploy(['live'], LIVE);
      // The same merchant's sk_test_ key is refused: so are its test client's token and secret.
      assert.equal((await createSession(s, { 'x-sc-apikey': testKey })).statusCode, 401);
      const refused = await createSession(s, bearer);
      assert.equal(refused.statusCode, 401);
      assert.match(refused.json().error.message, /this token was issued for test mode, which this deployment does not serve/);
      const again = await clientToken(s, client);
      assert.equal(again.statusCode, 401);
      assert.deepEqual(again.json(), {
        error: 'invalid_client',
        error_description: 'this client was made for test mode, which this deployment does not serve',
      });
      assert.deepEqual(await sessionsOf(s, merchantId), ['sandbox'], 'no live session was made');

      // A test grant cannot mint an sk_live_ key: its token is refused, named, and the refusal audited in its mode.
      const minted = await callMcpTool(s.app, agent.accessToken, 'create_api_key');
      assert.equal(minted.status, 401);
      assert.match(
        String(minted.headers['www-authenticate']),
        /error="invalid_token", error_description="this token was issued for test mode, which this deployment does not serve"/,
      );
      assert.deepEqual(await keysOf(s, merchantId), ['test']);
      const [audited] = await listToolCalls(s.context.db, merchantId, 1);
      assert.deepEqual([audited?.tool, audited?.outcome, audited?.reason, audited?.mode], ['create_api_key', 'refused', 'mode_not_served', 'sandbox']);

      // Refresh tokens too: the agent's, and the development client's whose document a live deployment refuses.
      for (const [clientId, refreshToken] of [
        [agent.clientId, agent.refreshToken],
        [DEVELOPMENT_CLIENT, rotated.json().refresh_token],
      ] as const) {
        const answer = await refresh(s, clientId, refreshToken);
        assert.equal(answer.statusCode, 400, clientId);
        assert.deepEqual(answer.json(), {
          error: 'invalid_grant',
          error_description: 'the refresh token was issued for test mode, which this deployment does not serve',
        });
      }
    });

    test('a development client’s refresh token does not outlive the rule that refused its document, and is never live', async () => {
      let s = await deploy(['sandbox'], ALLOW_LOOPBACK);
      const { merchantId } = await createMerchant(s.context.db);
      const developer = await agentWithRefreshToken(s, merchantId, 'sandbox', DEVELOPMENT_CLIENT);
      assert.equal((await callMcpTool(s.app, developer.accessToken, 'list_api_keys')).status, 200);

      s = await deploy(['sandbox']);
      const refusal = /the client http:\/\/127\.0\.0\.1:8976\/client\.json is a development client on this machine, which this deployment does not accept/;
      const answer = await refresh(s, DEVELOPMENT_CLIENT, developer.refreshToken);
      assert.equal(answer.statusCode, 400);
      assert.equal(answer.json().error, 'invalid_grant');
      assert.match(answer.json().error_description, refusal);
      const call = await callMcpTool(s.app, developer.accessToken, 'list_api_keys');
      assert.equal(call.status, 401);
      assert.match(String(call.headers['www-authenticate']), refusal);

      // Allowed again (development), the refresh token was kept: it works. A live grant of such a client never does.
      s = await deploy(['sandbox', 'live'], ALLOW_LOOPBACK);
      assert.equal((await refresh(s, DEVELOPMENT_CLIENT, developer.refreshToken)).statusCode, 200);
      const live = await agentWithRefreshToken(s, merchantId, 'live', 'http://localhost:8977/client.json');
      const liveRefresh = await refresh(s, live.clientId, live.refreshToken);
      assert.equal(liveRefresh.statusCode, 400);
      assert.match(liveRefresh.json().error_description, /is a development client on this machine, which is never given live data/);
      assert.equal((await callMcpTool(s.app, live.accessToken, 'list_api_keys')).status, 401);
    });

    test('serving both modes, each credential acts on its own mode’s data only, and the MCP audit records it', async () => {
      const s = await deploy(['sandbox', 'live'], LIVE);
      const { merchantId } = await createMerchant(s.context.db, { keyMode: 'test' });
      const agents = { sandbox: await agentWithRefreshToken(s, merchantId, 'sandbox'), live: await agentWithRefreshToken(s, merchantId, 'live') };

      const made = {
        sandbox: (await callMcpTool(s.app, agents.sandbox.accessToken, 'create_api_key')).body.result.structuredContent,
        live: (await callMcpTool(s.app, agents.live.accessToken, 'create_api_key')).body.result.structuredContent,
      };
      assert.match(made.sandbox.apiKey, /^sk_test_/, 'a test grant mints test keys only');
      assert.match(made.live.apiKey, /^sk_live_/);
      for (const mode of ['sandbox', 'live'] as const) {
        const listed = (await callMcpTool(s.app, agents[mode].accessToken, 'list_api_keys')).body.result.structuredContent;
        const keyMode = mode === 'sandbox' ? 'test' : 'live';
        assert.ok(listed.count >= 1 && listed.keys.every((key: { mode: string }) => key.mode === keyMode), `${mode}: ${JSON.stringify(listed)}`);
        const session = (await callMcpTool(s.app, agents[mode].accessToken, 'create_payment_session', { amount: 3, currency: 'USD' })).body.result;
        assert.equal(session.isError, undefined, JSON.stringify(session));
        const row = await s.context.db
          .selectFrom('payment_sessions')
          .select('mode')
          .where('id', '=', session.structuredContent.sessionId)
          .executeTakeFirstOrThrow();
        assert.equal(row.mode, mode, 'the agent’s payment link is of its grant’s mode');
        // A refresh keeps the grant's mode.
        const refreshed = await refresh(s, agents[mode].clientId, agents[mode].refreshToken);
        assert.equal(refreshed.statusCode, 200, refreshed.body);
        assert.equal(decodeJwt(refreshed.json().access_token).mode, keyMode);
      }
      const audited = await listToolCalls(s.context.db, merchantId, 100);
      assert.equal(audited.length, 6);
      for (const call of audited) assert.equal(call.mode, call.grantId === agents.live.grantId ? 'live' : 'sandbox', call.tool);

      // A client-credentials token: the request is of its client's mode.
      for (const mode of ['sandbox', 'live'] as const) {
        const token = (await clientToken(s, await createClient(s.context.db, merchantId, mode))).json().access_token;
        const request = { headers: { authorization: `Bearer ${token}` } } as unknown as FastifyRequest;
        assert.equal((await requireMerchant(s.context, request)).mode, mode);
      }
    });

    test('the reverse: live credentials are refused, named, by a deployment serving test only', async () => {
      let s = await deploy(['sandbox', 'live'], LIVE);
      const { merchantId } = await createMerchant(s.context.db, { keyMode: 'test' });
      const client = await createClient(s.context.db, merchantId, 'live');
      const bearer = { authorization: `Bearer ${(await clientToken(s, client)).json().access_token}` };
      const agent = await agentWithRefreshToken(s, merchantId, 'live');

      s = await deploy(['sandbox']);
      const refused = await createSession(s, bearer);
      assert.equal(refused.statusCode, 401);
      assert.match(refused.json().error.message, /this token was issued for live mode, which this deployment does not serve/);
      assert.deepEqual((await clientToken(s, client)).json(), {
        error: 'invalid_client',
        error_description: 'this client was made for live mode, which this deployment does not serve',
      });
      const call = await callMcpTool(s.app, agent.accessToken, 'list_api_keys');
      assert.equal(call.status, 401);
      assert.match(String(call.headers['www-authenticate']), /this token was issued for live mode, which this deployment does not serve/);
      assert.match(
        (await refresh(s, agent.clientId, agent.refreshToken)).json().error_description,
        /issued for live mode, which this deployment does not serve/,
      );
      assert.deepEqual(await sessionsOf(s, merchantId), []);
    });
  });
}
