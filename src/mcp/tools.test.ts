import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiKey } from '../merchants/api-keys.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { authorizedAgent, authorizedAgents, callMcpTool, mcpRequest } from '../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createSession } from '../testing/shop.ts';
import { listToolCalls } from './audit.ts';
import { KEYS_PER_ACCOUNT, KEYS_PER_DAY_PER_AUTHORIZATION } from './tools/create-api-key.ts';

const WALLET = '0x1111111111111111111111111111111111111111';

for (const { engine, skip } of engines) {
  describeOnEngine(`MCP tools on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
    });
    after(() => service?.stop());

    /** A new merchant (with a wallet) and an agent holding these scopes on it. */
    const agentOn = async (scopes: Parameters<typeof authorizedAgent>[2]) => {
      const { merchantId } = await service.merchant({ walletAddress: WALLET });
      return { merchantId, ...(await authorizedAgent(service.context, merchantId, scopes)) };
    };
    const call = async (token: string, name: string, args: Record<string, unknown> = {}) => (await callMcpTool(service.app, token, name, args)).body.result;
    const audited = async (merchantId: string) => (await listToolCalls(service.context.db, merchantId, 1000)).map((c) => [c.tool, c.outcome, c.reason]);

    test('get_payment_settings shows chains and tokens and whether a payout address is set, never the address', async () => {
      const { accessToken } = await agentOn(['settings:read']);
      const result = await call(accessToken, 'get_payment_settings');
      assert.deepEqual(result.structuredContent.chains, [{ name: 'base', tokens: ['USDC'], payoutAddressConfigured: true }]);
      assert.ok(!JSON.stringify(result).toLowerCase().includes(WALLET.slice(2)), 'the wallet address is never shown');
    });

    test('list_payment_sessions finds an order by orderId, pages with the cursor, and refuses a bad filter by name', async () => {
      const { merchantId, apiKey } = await service.merchant({ walletAddress: WALLET });
      const { accessToken } = await authorizedAgent(service.context, merchantId, ['orders:read']);
      const other = await agentOn(['orders:read']);
      for (const orderId of ['agent-a', 'agent-b', 'agent-c']) {
        clock += 1000;
        await createSession(service, apiKey, { amount: 5, currency: 'USD', orderId });
      }
      const found = (await call(accessToken, 'list_payment_sessions', { orderId: 'agent-b' })).structuredContent;
      assert.deepEqual(
        found.sessions.map((s: { orderId: string }) => s.orderId),
        ['agent-b'],
      );
      assert.equal(found.nextCursor, null);
      const first = (await call(accessToken, 'list_payment_sessions', { limit: 2, status: 'OPEN' })).structuredContent;
      assert.deepEqual(
        first.sessions.map((s: { orderId: string }) => s.orderId),
        ['agent-c', 'agent-b'],
      );
      const second = (await call(accessToken, 'list_payment_sessions', { limit: 2, status: 'OPEN', cursor: first.nextCursor })).structuredContent;
      assert.deepEqual(
        second.sessions.map((s: { orderId: string }) => s.orderId),
        ['agent-a'],
      );
      assert.equal(second.nextCursor, null);
      // Another merchant's agent sees none of them.
      assert.deepEqual((await call(other.accessToken, 'list_payment_sessions', { orderId: 'agent-b' })).structuredContent.sessions, []);
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ cursor: 'AAAA' }, /cursor is not a cursor this list gave/],
        [{ status: 'PAID' }, /status/],
        [{ createdFrom: '2026-01-02T00:00:00Z', createdTo: '2026-01-01T00:00:00Z' }, /createdTo must be after createdFrom/],
        [{ limit: 101 }, /limit/],
      ];
      for (const [args, message] of refusals) {
        const result = await call(accessToken, 'list_payment_sessions', args);
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(result.content[0].text, message);
      }
    });

    test('create_payment_session refusals name what was refused, create nothing, and are audited once each', async () => {
      const { merchantId, accessToken } = await agentOn(['sessions:write']);
      const cases: [Record<string, unknown>, RegExp, string][] = [
        [{ amount: 10, currency: 'USD', minAmount: 5 }, /minAmount/, 'invalid_field'],
        [
          { amount: 10, currency: 'USD', chains: [{ name: 'ethereum', tokens: ['USDC'] }] },
          /chain "ethereum" is not accepted; accepted: base/,
          'unsupported_chain',
        ],
        [
          { amount: 10, currency: 'USD', chains: [{ name: 'base', tokens: ['DAI'] }] },
          /token "DAI" is not accepted on base; accepted: USDC/,
          'unsupported_token',
        ],
        [{ amount: 10, currency: 'USD', walletAddress: WALLET }, /unknown argument "walletAddress".*accepts: amount, currency/, 'unknown_argument'],
      ];
      for (const [args, message, reason] of cases) {
        const result = await call(accessToken, 'create_payment_session', args);
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(result.content[0].text, message);
        const rows = (await audited(merchantId)).filter((row) => row[2] === reason);
        assert.deepEqual(rows, [['create_payment_session', 'refused', reason]], reason);
      }
      const sessions = await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(sessions.length, 0, 'nothing was created');
      const editable = await call(accessToken, 'create_payment_session', { amount: 10, currency: 'USD', editable: true, minAmount: 5 });
      assert.match(editable.structuredContent.sessionId, /^ps_/);
    });

    test('the payout wallet cannot be changed over MCP: no tool takes it, and asking for one is refused and audited', async () => {
      const { merchantId, accessToken } = await agentOn(['settings:read', 'sessions:write', 'keys:write']);
      const answer = await callMcpTool(service.app, accessToken, 'set_payout_wallet', { address: '0x2222222222222222222222222222222222222222' });
      assert.ok(answer.body.error || answer.body.result?.isError, 'refused');
      assert.deepEqual(await audited(merchantId), [['set_payout_wallet', 'refused', 'unknown_tool']]);
      assert.equal((await findMerchant(service.context.db, merchantId))?.wallets.sandbox, WALLET);
    });

    test(`create_api_key: at most ${KEYS_PER_DAY_PER_AUTHORIZATION} per 24 h per authorization; the key is shown once`, async () => {
      const { merchantId, accessToken, grantId, clientId } = await agentOn(['keys:write', 'keys:read']);
      const start = clock;
      try {
        for (let i = 0; i < KEYS_PER_DAY_PER_AUTHORIZATION; i++) {
          clock = start + i * 60_000;
          const result = await call(accessToken, 'create_api_key');
          assert.match(result.structuredContent.apiKey, /^sk_test_/);
        }
        const listed = await call(accessToken, 'list_api_keys');
        assert.equal(listed.structuredContent.count, KEYS_PER_DAY_PER_AUTHORIZATION + 1);
        assert.ok(!JSON.stringify(listed).includes('sk_test_'), 'listed keys are masked');
        const sixth = await call(accessToken, 'create_api_key');
        assert.equal(sixth.isError, true);
        assert.match(sixth.content[0].text, /already created 5 API keys in the last 24 hours/);
        assert.equal((await audited(merchantId)).filter((row) => row[2] === 'key_limit_per_authorization').length, 1);
        clock = start + 86_400_000 + 1;
        // A day later (with a fresh access token of the same grant) it may create again.
        const later = await authorizedAgent(service.context, merchantId, ['keys:write'], clientId);
        assert.equal(later.grantId, grantId);
        assert.match((await call(later.accessToken, 'create_api_key')).structuredContent.apiKey, /^sk_test_/);
      } finally {
        clock = start;
      }
    });

    test('create_api_key restricts a key only to scopes its own token holds; the key is refused outside them', async () => {
      const { merchantId, accessToken } = await agentOn(['keys:write']);
      const beyond = await call(accessToken, 'create_api_key', { scopes: ['sessions:write'] });
      assert.equal(beyond.isError, true);
      assert.match(beyond.content[0].text, /does not hold sessions:write, so it cannot give it to a key; nothing was made/);
      assert.ok(
        (await audited(merchantId)).some((row) => row.join() === 'create_api_key,refused,scope_not_held'),
        'audited as refused',
      );
      const unknown = await call(accessToken, 'create_api_key', { scopes: ['refunds:everything'] });
      assert.equal(unknown.isError, true);

      const writer = await agentOn(['keys:write', 'sessions:write']);
      const made = await call(writer.accessToken, 'create_api_key', { scopes: ['sessions:write'] });
      assert.deepEqual(made.structuredContent.scopes, ['sessions:write']);
      const read = await service.app.inject({
        method: 'GET',
        url: '/api/checkout/v2/payment_session',
        headers: { 'x-sc-apikey': made.structuredContent.apiKey },
      });
      assert.equal(read.statusCode, 403);
      assert.equal(read.json().error.code, 'insufficient_scope');
      assert.equal((await call(writer.accessToken, 'create_api_key')).structuredContent.scopes, null, 'a full key when no scopes are asked for');
    });

    test(`create_api_key: at most ${KEYS_PER_ACCOUNT} keys on an account`, async () => {
      const { merchantId, accessToken } = await agentOn(['keys:write']);
      // service.merchant() made one key; the account is filled up to the limit.
      for (let i = 1; i < KEYS_PER_ACCOUNT; i++) await createApiKey(service.context.db, merchantId, 'test');
      const result = await call(accessToken, 'create_api_key');
      assert.equal(result.isError, true);
      assert.match(result.content[0].text, /already has 25 API keys/);
      assert.deepEqual(await audited(merchantId), [['create_api_key', 'refused', 'key_limit_per_account']]);
    });

    const activeKeys = async (merchantId: string) =>
      (await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).where('revoked_at', 'is', null).execute()).length;

    test(`create_api_key: 20 racing calls on one authorization make exactly ${KEYS_PER_DAY_PER_AUTHORIZATION} keys`, async () => {
      const { merchantId, accessToken } = await agentOn(['keys:write']);
      const results = await Promise.all(Array.from({ length: 20 }, () => call(accessToken, 'create_api_key')));
      const made = results.filter((r) => !r.isError);
      assert.equal(made.length, KEYS_PER_DAY_PER_AUTHORIZATION, results.map((r) => r.content[0].text.slice(0, 80)).join('\n'));
      for (const refused of results.filter((r) => r.isError)) assert.match(refused.content[0].text, /already created 5 API keys in the last 24 hours/);
      assert.equal(await activeKeys(merchantId), 1 + KEYS_PER_DAY_PER_AUTHORIZATION, 'the merchant’s first key and five more');
      const rows = await audited(merchantId);
      assert.equal(rows.filter((row) => row[1] === 'ok').length, KEYS_PER_DAY_PER_AUTHORIZATION);
      assert.equal(rows.filter((row) => row[2] === 'key_limit_per_authorization').length, 20 - KEYS_PER_DAY_PER_AUTHORIZATION);
    });

    test(`create_api_key: 20 authorizations racing for the last free place on an account make one key, never more than ${KEYS_PER_ACCOUNT}`, async () => {
      const { merchantId } = await service.merchant({ walletAddress: WALLET });
      for (let i = 2; i < KEYS_PER_ACCOUNT; i++) await createApiKey(service.context.db, merchantId, 'test');
      assert.equal(await activeKeys(merchantId), KEYS_PER_ACCOUNT - 1);
      const agents = await authorizedAgents(service.context, merchantId, ['keys:write'], 20);
      const results = await Promise.all(agents.map((agent) => call(agent.accessToken, 'create_api_key')));
      assert.equal(results.filter((r) => !r.isError).length, 1, results.map((r) => r.content[0].text.slice(0, 80)).join('\n'));
      assert.equal(await activeKeys(merchantId), KEYS_PER_ACCOUNT);
      assert.equal((await audited(merchantId)).filter((row) => row[2] === 'key_limit_per_account').length, 19);
    });

    test('list_orders pages with bounds; get_receipt of another account’s order is not found', async () => {
      const { accessToken } = await agentOn(['orders:read']);
      assert.deepEqual((await call(accessToken, 'list_orders')).structuredContent, { orders: [], page: 1, size: 20, hasMore: false });
      const tooBig = await call(accessToken, 'list_orders', { size: 101 });
      assert.equal(tooBig.isError, true);
      assert.match(tooBig.content[0].text, /size/);
      const missing = await call(accessToken, 'get_receipt', { publicOrderId: 'abc' });
      assert.equal(missing.isError, true);
      assert.match(missing.content[0].text, /No order TX-ABC on this account/i);
    });

    test('the quickstart is rendered from the live account', async () => {
      const { merchantId, accessToken } = await agentOn(['settings:read']);
      const read = await mcpRequest(service.app, accessToken, 'resources/read', { uri: 'service://quickstart' });
      const text = read.body.result.contents[0].text as string;
      const merchant = await findMerchant(service.context.db, merchantId);
      assert.ok(text.includes(merchant!.name));
      assert.match(text, /\| base \| USDC \| yes \|/);
      assert.match(text, /\/api\/checkout\/v2/);
      assert.match(text, /curl -s -X POST/);
    });
  });
}
