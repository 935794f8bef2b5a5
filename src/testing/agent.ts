import type { FastifyInstance } from 'fastify';
import { createUser } from '../accounts/users.ts';
import type { Mode } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import { addConsent } from '../oauth/grants.ts';
import type { Scope } from '../oauth/scopes.ts';
import { issueMcpToken } from '../oauth/tokens.ts';

let users = 0;
let clients = 0;

type AgentContext = Pick<AppContext, 'db' | 'config' | 'now'>;
export type AuthorizedAgent = { grantId: string; accessToken: string; userId: string; clientId: string; mode: Mode };

/** Agents are given test data unless a test says otherwise (live data on a deployment serving live only). */
const defaultAgentMode = (context: AgentContext): Mode => (context.config.modes.includes('sandbox') ? 'sandbox' : 'live');

/** A merchant user who consents for the agents; each has a fresh email. */
const consentingUser = (context: AgentContext, merchantId: string) =>
  createUser(context.db, { merchantId, email: `agent-owner-${++users}-${Date.now()}@shop.example`, password: 'correct horse battery staple' });

async function consentAndIssue(
  context: AgentContext,
  merchantId: string,
  userId: string,
  scopes: Scope[],
  clientId: string,
  mode = defaultAgentMode(context),
): Promise<AuthorizedAgent> {
  const grant = await context.db
    .transaction()
    .execute((trx) => addConsent(trx, { merchantId, userId, clientId, clientName: 'Test agent', scopes, mode }, context.now()));
  const { accessToken } = await issueMcpToken(
    context.db,
    context.config,
    { grantId: grant.id, clientId, merchantId, userId, scopes: grant.scopes, mode },
    context.now(),
  );
  return { grantId: grant.id, accessToken, userId, clientId, mode };
}

/**
 * A coding agent authorized on a merchant's account, as consent and the code exchange leave it
 * (the full OAuth flow is tested in src/oauth/): a grant with these scopes on one mode's data (test
 * unless the deployment serves live only) and an access token for the MCP endpoint. Each call is a
 * new client unless `clientId` is given (consent to the same client in the same mode adds to its grant).
 */
export async function authorizedAgent(
  context: AgentContext,
  merchantId: string,
  scopes: Scope[],
  clientId = `https://agent.example/${++clients}/client.json`,
  mode?: Mode,
): Promise<AuthorizedAgent> {
  const user = await consentingUser(context, merchantId);
  return consentAndIssue(context, merchantId, user.id, scopes, clientId, mode);
}

/** `count` agents (distinct clients, so distinct grants, each with its own limits) authorized by one user. */
export async function authorizedAgents(context: AgentContext, merchantId: string, scopes: Scope[], count: number): Promise<AuthorizedAgent[]> {
  const user = await consentingUser(context, merchantId);
  const agents: AuthorizedAgent[] = [];
  for (let i = 0; i < count; i++) agents.push(await consentAndIssue(context, merchantId, user.id, scopes, `https://agent.example/${++clients}/client.json`));
  return agents;
}

let requests = 0;

/**
 * The protocol versions the endpoint serves, each as its clients post: 2025-11-25 is answered as one
 * SSE event, 2026-07-28 (its per-request `_meta` envelope and `Mcp-Method` header) as JSON.
 */
export type McpProtocol = '2025-11-25' | '2026-07-28';

function envelopeOf(protocol: McpProtocol, method: string, params: Record<string, unknown>) {
  if (protocol === '2025-11-25') return { headers: {}, params };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': protocol,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'test-agent', version: '1.0.0' },
  };
  const name = method === 'tools/call' && typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  return { headers: { 'mcp-method': method, ...name }, params: { ...params, _meta: meta } };
}

/** One JSON-RPC request to POST /mcp (protocol 2025-11-25 unless given); the answer whether it came as JSON or as one SSE event. */
export async function mcpRequest(
  app: FastifyInstance,
  token: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  protocol: McpProtocol = '2025-11-25',
) {
  const envelope = envelopeOf(protocol, method, params);
  const response = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': protocol,
      ...envelope.headers,
    },
    payload: { jsonrpc: '2.0', id: ++requests, method, params: envelope.params },
  });
  const data = /^data: (.*)$/m.exec(response.body)?.[1];
  const body = data ? JSON.parse(data) : response.body ? response.json() : undefined;
  return { status: response.statusCode, headers: response.headers, body };
}

/** A tools/call; `result` is the tool's result (`isError` set when refused). */
export const callMcpTool = (app: FastifyInstance, token: string, name: string, args: Record<string, unknown> = {}, protocol: McpProtocol = '2025-11-25') =>
  mcpRequest(app, token, 'tools/call', { name, arguments: args }, protocol);
