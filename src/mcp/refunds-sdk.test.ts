// Refunds by coding agents through the official MCP client SDKs, v2 (protocol 2026-07-28) and v1
// (2025-11-25), against the real service on the sandbox chain: the merchant grants the refund scopes
// on the consent page (never pre-ticked), an agent finds the order with list_payment_sessions,
// prepares a refund, signs it with the payout wallet's key (viem) and submits it; the chain shows
// the transfer; the limits the merchant set in the dashboard refuse the next one, naming the limit;
// no limits set (or a limit of 0) refuse every refund; the dashboard's audit shows every call; and
// (in process) two refunds submitted at once never pass the grant's limit per 24 hours.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { auth as authV2, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { auth as authV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Address, LocalAccount } from 'viem';
import { createUser } from '../accounts/users.ts';
import { authorizedAgent as authorizedAgentInProcess, callMcpTool } from '../testing/agent.ts';
import { AgentAuth } from '../testing/agent-auth.ts';
import { transfersOnChain } from '../testing/buyer.ts';
import { type DocumentServer, startDocumentServer } from '../testing/document-server.ts';
import { freePort } from '../testing/environment.ts';
import { describeOnEngine, engines, type PayingService, startPayingService } from '../testing/harness.ts';
import { merchantAtConsent, serveAgentDocument } from '../testing/oauth-flow.ts';
import { Browser } from '../testing/page-browser.ts';
import { newAccount } from '../testing/payer.ts';
import { type RefundTypedData, signRefund } from '../testing/refunds.ts';
import { challenge, createSession, fundedPayer, pay, signedPayment } from '../testing/shop.ts';
import { waitFor } from '../testing/wait.ts';

const PASSWORD = 'correct horse battery staple';
const REFUND_SCOPES = 'settings:read orders:read refunds:read refunds:write';

type ToolAnswer = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };
type McpClient = { callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<unknown>; close(): Promise<void> };

for (const { engine, skip } of engines) {
  describeOnEngine(`refunds by coding agents through the MCP client SDKs on ${engine}`, skip, () => {
    let env: PayingService;
    let site: DocumentServer;
    let base: string;
    let payout: LocalAccount;
    let apiKey: string;
    let email: string;
    let dashboard: Browser;

    before(async () => {
      site = await startDocumentServer();
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      env = await startPayingService(
        engine,
        { TILL_BASE_URL: base, TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true', TILL_RECONCILE_INTERVAL_MS: '200' },
        { workers: true, port },
      );
      payout = newAccount();
      let merchantId: string;
      ({ merchantId, apiKey } = await env.service.merchant({ name: 'Agent Refund Shop', walletAddress: payout.address }));
      email = `owner-agent-refunds-${engine}@shop.example`;
      await createUser(env.service.context.db, { merchantId, email, password: PASSWORD });
      dashboard = new Browser(env.service);
      assert.equal((await dashboard.signIn(email, PASSWORD)).statusCode, 303);
    });
    after(async () => {
      await env?.stop();
      await site?.close();
    });

    /** A session paid over x402 by a new buyer, under a known orderId. */
    const paidOrder = async (orderId: string) => {
      const sessionId = await createSession(env.baseUrl, apiKey, { amount: 1, currency: 'USD', orderId });
      const payer = await fundedPayer(env.sandbox, '2');
      const offer = await challenge(env.baseUrl, sessionId);
      const response = await pay(env.baseUrl, sessionId, (await signedPayment(payer, env.sandbox.usdcAddress, offer)).header);
      assert.equal(response.status, 200);
      return { sessionId, payer };
    };
    const merchantIdOf = async (sessionId: string) =>
      (await env.service.context.db.selectFrom('payment_sessions').select('merchant_id').where('id', '=', sessionId).executeTakeFirstOrThrow()).merchant_id;
    const refundTransfers = (payer: Address) => transfersOnChain(env.sandbox.rpcUrl, env.sandbox.usdcAddress, { from: payout.address, to: payer });

    /**
     * A new agent authorized with the refund scopes through the SDK's own auth(): the merchant ticks
     * them on the consent page, where they were not pre-ticked. Answers its grant id.
     */
    const authorizedAgent = async (slug: string, auth: typeof authV1 | typeof authV2) => {
      const agent = serveAgentDocument(site, slug, `${slug} agent`);
      const agentAuth = new AgentAuth({ ...agent, issuer: base }, merchantAtConsent(base, email, PASSWORD));
      const serverUrl = new URL(`${base}/mcp`);
      assert.equal(await auth(agentAuth as never, { serverUrl, scope: REFUND_SCOPES }), 'REDIRECT');
      const page = agentAuth.consentPages.at(-1)!;
      for (const scope of ['refunds:read', 'refunds:write']) {
        const box = new RegExp(`<input type="checkbox" name="scope" value="${scope}"[^>]*>`).exec(page)?.[0];
        assert.ok(box, `the consent page offers ${scope}`);
        assert.doesNotMatch(box, /checked/, `${scope} is not pre-ticked`);
      }
      // The callback's issuer too (RFC 9207): v2 checks it, v1 ignores it.
      const iss = agentAuth.callback!.searchParams.get('iss') ?? undefined;
      assert.equal(await auth(agentAuth as never, { serverUrl, authorizationCode: agentAuth.code, ...(iss ? { iss } : {}) } as never), 'AUTHORIZED');
      assert.equal(agentAuth.grantedScope, REFUND_SCOPES);
      const grant = await env.service.context.db
        .selectFrom('oauth_grants')
        .select('id')
        .where('client_id', '=', agent.clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      return { agentAuth, grantId: grant.id };
    };

    /** The merchant's Developers form for one agent's refund limits. */
    const setLimits = async (grantId: string, perRefund: string, perDay: string) =>
      dashboard.request('POST', `/dashboard/developers/agents/${grantId}/refund-limits`, {
        csrf: await dashboard.csrf('/dashboard/developers'),
        perRefund,
        perDay,
      });

    const callTool = async (mcp: McpClient, name: string, args: Record<string, unknown>) => (await mcp.callTool({ name, arguments: args })) as ToolAnswer;
    const refusedText = (answer: ToolAnswer) => {
      assert.equal(answer.isError, true, JSON.stringify(answer));
      return answer.content[0]!.text;
    };

    /** The whole story with one SDK's connected client. */
    async function refundStory(mcp: McpClient, grantId: string, orderId: string) {
      const { payer, sessionId } = await paidOrder(orderId);

      // The agent finds the order by its orderId alone.
      const found = await callTool(mcp, 'list_payment_sessions', { orderId, status: 'SUCCESS' });
      const sessions = (found.structuredContent as { sessions: { sessionId: string; payments: { paymentId: string }[] }[] }).sessions;
      assert.deepEqual(
        sessions.map((s) => s.sessionId),
        [sessionId],
      );
      const paymentId = sessions[0]!.payments[0]!.paymentId;

      // No limits set: refused, nothing prepared.
      assert.match(refusedText(await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.4' })), /set no refund limits for this authorization/);
      // A limit of zero refuses everything.
      assert.equal((await setLimits(grantId, '0', '0')).statusCode, 303);
      assert.match(
        refusedText(await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.4' })),
        /limit per refund, 0\.00 USDC \(a limit of 0 refuses every refund\)/,
      );

      assert.equal((await setLimits(grantId, '0.5', '0.6')).statusCode, 303);
      const prepared = await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.4' });
      assert.notEqual(prepared.isError, true, JSON.stringify(prepared));
      const { typedData, submit } = prepared.structuredContent as { typedData: RefundTypedData; submit: Record<string, string> };
      assert.equal(typedData.message.from, payout.address);
      const made = await callTool(mcp, 'submit_refund', { ...submit, signature: await signRefund(payout, typedData), reason: 'agent refund' });
      assert.notEqual(made.isError, true, JSON.stringify(made));
      const refund = made.structuredContent as { id: string; origin: string };
      assert.equal(refund.origin, 'mcp');

      const listed = await waitFor(async () => {
        const answer = await callTool(mcp, 'list_refunds', { paymentId });
        const [first] = (answer.structuredContent as { refunds: { id: string; status: string; transactionHash: string }[] }).refunds;
        return first?.status === 'SUCCEEDED' && first;
      }, 'the agent sees its refund SUCCEEDED');
      assert.equal(listed.id, refund.id);
      const transfers = await refundTransfers(payer.address);
      assert.deepEqual(
        transfers.map((t) => [t.value, t.txHash]),
        [[400_000n, listed.transactionHash]],
      );

      // 0.3 more would bring the grant's 24 hours to 0.7 USDC, over its 0.6: refused, naming the limit.
      assert.match(
        refusedText(await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.3' })),
        /refunds of the last 24 hours to 0\.70 USDC, over its refund limit per 24 hours, 0\.60 USDC/,
      );
      // One prepared within the limits, then the merchant lowers them: the submit is refused by the limit the merchant set last.
      const small = (await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.1' })).structuredContent as {
        typedData: RefundTypedData;
        submit: Record<string, string>;
      };
      assert.equal((await setLimits(grantId, '0.05', '0.6')).statusCode, 303);
      assert.match(
        refusedText(await callTool(mcp, 'submit_refund', { ...small.submit, signature: await signRefund(payout, small.typedData) })),
        /0\.10 USDC is over this authorization's refund limit per refund, 0\.05 USDC/,
      );
      assert.equal((await refundTransfers(payer.address)).length, 1, 'nothing more moved');

      // Arguments the tool cannot take are refused by name.
      assert.match(refusedText(await callTool(mcp, 'prepare_refund', { paymentId: 'TX-1', amount: '0.1' })), /paymentId is invalid: must be an order id/);
      assert.match(refusedText(await callTool(mcp, 'prepare_refund', { paymentId, amount: '0.1', perDay: '100' })), /unknown argument "perDay"/);

      // The dashboard's audit shows the calls, done and refused, with the limit that refused them.
      const audit = (await dashboard.request('GET', `/dashboard/developers?grant=${grantId}&tool=submit_refund`)).body;
      assert.match(audit, /<code>submit_refund<\/code><\/td>\s*<td data-label="Outcome">Done/);
      assert.match(audit, /<code>submit_refund<\/code><\/td>\s*<td data-label="Outcome">Refused<br><span class="note">refund_limit_per_refund/);
      const prepares = (await dashboard.request('GET', `/dashboard/developers?grant=${grantId}&tool=prepare_refund&outcome=refused`)).body;
      for (const reason of ['refund_limit_unset', 'refund_limit_per_refund', 'refund_limit_per_day', 'invalid_field', 'unknown_argument'])
        assert.match(prepares, new RegExp(`<span class="note">${reason}</span>`));
    }

    test("an agent's refunds submitted at once never pass its limit per 24 hours: one is made, the other refused naming it", async () => {
      const { sessionId, payer } = await paidOrder(`agent-order-race-${engine}`);
      const agent = await authorizedAgentInProcess(env.service.context, await merchantIdOf(sessionId), ['refunds:write']);
      assert.equal((await setLimits(agent.grantId, '0.5', '0.5')).statusCode, 303);
      const paymentId = (
        await env.service.context.db.selectFrom('payments').select('public_order_id').where('session_id', '=', sessionId).executeTakeFirstOrThrow()
      ).public_order_id!;
      // Two refunds of 0.3 each, both within the limits alone, prepared and signed before either is made.
      const signed = [];
      for (let i = 0; i < 2; i++) {
        const prepared = (await callMcpTool(env.service.app, agent.accessToken, 'prepare_refund', { paymentId, amount: '0.3' })).body.result;
        const { typedData, submit } = prepared.structuredContent as { typedData: RefundTypedData; submit: Record<string, string> };
        signed.push({ ...submit, signature: await signRefund(payout, typedData) });
      }
      const answers = await Promise.all(signed.map((args) => callMcpTool(env.service.app, agent.accessToken, 'submit_refund', args)));
      const results = answers.map((answer) => answer.body.result as ToolAnswer);
      assert.equal(results.filter((result) => result.isError !== true).length, 1, JSON.stringify(results));
      assert.match(results.find((result) => result.isError)!.content[0]!.text, /over its refund limit per 24 hours, 0\.50 USDC/);
      await waitFor(async () => (await refundTransfers(payer.address)).length === 1, 'the one refund on chain');
      assert.deepEqual(
        (await refundTransfers(payer.address)).map((t) => t.value),
        [300_000n],
      );
    });

    test('SDK v2 (2026-07-28): consent to the refund scopes, find the order, prepare, sign and submit a partial refund, then the limits refuse', async () => {
      const { agentAuth, grantId } = await authorizedAgent('refund-v2', authV2);
      const mcp = new Client({ name: 'refund-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: agentAuth }));
      assert.equal(mcp.getNegotiatedProtocolVersion(), '2026-07-28');
      await refundStory(mcp, grantId, `agent-order-v2-${engine}`);
      await mcp.close();
    });

    test('SDK v1 (2025-11-25): the same, on the earlier protocol revision', async () => {
      const { agentAuth, grantId } = await authorizedAgent('refund-v1', authV1);
      const mcp = new ClientV1({ name: 'refund-v1', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransportV1(new URL(`${base}/mcp`), { authProvider: agentAuth });
      await mcp.connect(transport);
      assert.equal(transport.protocolVersion, '2025-11-25');
      await refundStory(mcp, grantId, `agent-order-v1-${engine}`);
      await mcp.close();
    });
  });
}
