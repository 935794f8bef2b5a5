import { type AuthInfo, createMcpHandler } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RailsByMode } from '../chain/rails.ts';
import { TillError } from '../common/errors.ts';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { addRoute } from '../http/routes.ts';
import { DEFAULT_SCOPES } from '../oauth/scopes.ts';
import { mcpAudience } from '../oauth/tokens.ts';
import { callerAccess } from './access.ts';
import { callerOf, recordRefusal } from './audit.ts';
import { hourlyLimitRetryAfter, TOOL_CALLS_PER_HOUR } from './limits.ts';
import { buildMcpServer } from './server.ts';
import { auditOnRequest, type McpRequestState } from './tool.ts';
import { TOOLS } from './tools.ts';

const TAG = 'MCP';

/** Where a client finds how to get a token (RFC 9728), named in every challenge. */
export const resourceMetadataUrl = (config: Pick<Config, 'mcpUrl'>) => `${config.mcpUrl}/.well-known/oauth-protected-resource/mcp`;

/** Spec 5.3: exactly this challenge for a request without a token. */
export const unauthorizedChallenge = (config: Pick<Config, 'mcpUrl'>) =>
  `Bearer resource_metadata="${resourceMetadataUrl(config)}", scope="${DEFAULT_SCOPES.join(' ')}"`;

/**
 * A token was sent but cannot be used (expired, revoked, not for this endpoint): RFC 6750 §3.1 names
 * it `invalid_token`, so a client refreshes or re-authorizes; the spec's parameters stay.
 */
export const invalidTokenChallenge = (config: Pick<Config, 'mcpUrl'>, description: string) =>
  `Bearer error="invalid_token", error_description="${description}", resource_metadata="${resourceMetadataUrl(config)}", scope="${DEFAULT_SCOPES.join(' ')}"`;

/**
 * Browser-based MCP clients call with a bearer token, never cookies, so any origin may: CORS allows
 * the MCP headers and exposes the challenge.
 */
const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID',
  'access-control-expose-headers': 'WWW-Authenticate, Retry-After, Mcp-Session-Id',
  'access-control-max-age': '600',
};

/** JSON-RPC error code of a call refused by the hourly limit (implementation-defined server error range). */
export const RATE_LIMITED_CODE = -32000;

/** JSON-RPC 2.0's Invalid Request, the SDK's answer to a message it will not take. */
export const INVALID_REQUEST_CODE = -32600;

type ToolCall = { id: string | number | null; name: string; arguments: unknown };

/**
 * The tool call a JSON-RPC body makes, if it is one. A message the SDK refuses as malformed (not
 * JSON-RPC 2.0, no string or integer id) is no call: it is answered 400 and not audited.
 */
export function toolCallOf(body: unknown): ToolCall | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const message = body as { jsonrpc?: unknown; method?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown } };
  if (message.jsonrpc !== '2.0' || !(typeof message.id === 'string' || Number.isInteger(message.id))) return undefined;
  if (message.method !== 'tools/call' || typeof message.params?.name !== 'string') return undefined;
  return { id: message.id as string | number, name: message.params.name, arguments: message.params.arguments ?? {} };
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return match?.[1];
}

const STATE_KEY = 'tillRequest';

/** Headers the SDK's handler reads; the others (cookies, tracing, the host) it never looks at. */
const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'mcp-method', 'mcp-name', 'last-event-id', 'origin'];

/**
 * The request as the SDK's web-standard handler takes it. The body is already parsed and handed to
 * the SDK as such, so the request carries none (but for a request Fastify found no body in, which
 * the SDK then reads itself, as before).
 */
function webRequest(context: AppContext, request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) for (const one of [value].flat()) headers.append(name, one);
  }
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && name.startsWith('mcp-param-') && typeof value === 'string') headers.append(name, value);
  }
  const url = new URL(request.url, context.config.mcpUrl);
  return request.body === undefined ? new Request(url, { method: 'POST', headers, body: 'null' }) : new Request(url, { method: 'POST', headers });
}

/**
 * The SDK's answer, read whole before it is sent: a stateless call's answer is one JSON body or an
 * SSE stream that ends with the call's response, and the call's audit must have been written
 * (or have failed) before a byte of it is answered.
 */
async function readResponse(response: Response): Promise<{ status: number; headers: [string, string][]; body: string | undefined }> {
  const headers: [string, string][] = [];
  response.headers.forEach((value, name) => {
    headers.push([name, value]);
  });
  return { status: response.status, headers, body: response.body ? await response.text() : undefined };
}

/**
 * Every answer of the endpoint may carry a secret (a new API key) or payment data: no cache keeps
 * one, whatever the transport and whoever answered (the SDK, a refusal, an error). An SSE stream
 * keeps `no-transform`, so no proxy rewrites it on its way; the SDK's `no-cache` would let a cache
 * store it.
 */
const mcpCacheControl = (contentType: unknown) => (String(contentType ?? '').startsWith('text/event-stream') ? 'no-store, no-transform' : 'no-store');

/** The MCP endpoint; `rails` are the modes' facilitators and chains, which the refund tools go through. */
export const registerMcpRoutes =
  (rails: RailsByMode) =>
  (app: FastifyInstance, context: AppContext): void => {
    app.register(async (scope) => {
      scope.addHook('onRequest', async (_request, reply) => {
        reply.headers(CORS_HEADERS);
      });
      scope.addHook('onSend', async (_request, reply, payload) => {
        reply.header('cache-control', mcpCacheControl(reply.getHeader('content-type')));
        return payload;
      });
      registerMcpEndpoint(scope, context, rails);
    });
  };

function registerMcpEndpoint(app: FastifyInstance, context: AppContext, rails: RailsByMode): void {
  // One handler for the app; it makes a fresh server per request from the caller's access.
  const handler = createMcpHandler((request) => buildMcpServer(context, request.authInfo?.extra?.[STATE_KEY] as McpRequestState, rails), {
    legacy: 'stateless',
    onerror: (error) => context.log.warn({ err: error }, 'MCP request refused'),
  });
  app.addHook('onClose', () => handler.close());

  const audience = mcpAudience(context.config);
  const metadataUrl = resourceMetadataUrl(context.config);
  const TOOL_NAMES = new Set(TOOLS.map((tool) => tool.name));

  const unauthorized = (reply: FastifyReply, description: string, tokenSent: boolean) =>
    reply
      .code(401)
      .header('www-authenticate', tokenSent ? invalidTokenChallenge(context.config, description) : unauthorizedChallenge(context.config))
      .header('cache-control', 'no-store')
      .send({ error: 'invalid_token', error_description: description });

  addRoute(
    app,
    {
      method: 'POST',
      url: '/mcp',
      summary: 'The MCP endpoint for coding agents (E5): streamable HTTP, JSON-RPC',
      description:
        'Protocol versions 2026-07-28 and 2025-11-25, stateless. Needs `Authorization: Bearer` with an access token for `{mcp_url}/mcp` from the OAuth authorization code flow (docs/mcp.md). Without one: 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope="settings:read orders:read"`. A tool whose scope was not granted: 403 `insufficient_scope` naming every scope needed. More than 300 tool calls in an hour on one authorization: a JSON-RPC error with the seconds to wait.',
      tag: TAG,
      security: 'none',
      responses: {
        200: { description: 'The JSON-RPC answer' },
        401: { description: 'No token, or not a token for this endpoint, expired, or its authorization revoked', schema: z.object({ error: z.string() }) },
        403: { description: 'A scope the call needs was not granted' },
      },
    },
    {},
    async (request, reply) => {
      const token = bearerToken(request);
      if (!token) return unauthorized(reply, 'send an access token for this MCP endpoint in Authorization: Bearer', false);
      const caller = await callerAccess(context, token);
      const call = toolCallOf(request.body);
      if (caller.kind === 'revoked' || caller.kind === 'refused') {
        // A good token of a revoked or refused grant: the refused call is audited like any other.
        const reason = caller.kind === 'revoked' ? 'grant_revoked' : caller.refusal.reason;
        if (call) await recordRefusal(context, caller.caller, call.name, reason, call.arguments);
        return unauthorized(
          reply,
          caller.kind === 'revoked' ? 'the authorization behind this token was revoked; authorize again' : caller.refusal.message,
          true,
        );
      }
      if (caller.kind !== 'active')
        return unauthorized(reply, 'the token is not an access token for this endpoint, or has expired; refresh it or authorize again', true);
      const { access } = caller;
      // Batches left JSON-RPC over MCP in 2025-06-18; one would slip its calls past the limit and the audit below.
      if (Array.isArray(request.body)) {
        await caller.touched;
        return reply
          .code(400)
          .header('content-type', 'application/json')
          .send({
            jsonrpc: '2.0',
            id: null,
            error: { code: INVALID_REQUEST_CODE, message: 'Invalid Request: JSON-RPC batches are not supported; send one message per request' },
          });
      }
      if (call && caller.countedCalls >= TOOL_CALLS_PER_HOUR) {
        // Over the limit by the count read with the grant; the oldest counted call says when it ends.
        const retryAfter = await hourlyLimitRetryAfter(context.db, access.grant.id, context.now());
        if (retryAfter !== undefined) {
          await recordRefusal(context, callerOf(access), call.name, 'rate_limited', call.arguments);
          await caller.touched;
          return reply.header('retry-after', String(retryAfter)).send({
            jsonrpc: '2.0',
            id: call.id,
            error: {
              code: RATE_LIMITED_CODE,
              message: `Rate limited: at most ${TOOL_CALLS_PER_HOUR} tool calls per hour per authorization. Retry in ${retryAfter} seconds.`,
              data: { retryAfterSeconds: retryAfter, limit: TOOL_CALLS_PER_HOUR },
            },
          });
        }
      }
      const state: McpRequestState = call ? { access, calling: call.name } : { access };
      const authInfo: AuthInfo = {
        token,
        clientId: access.grant.clientId,
        scopes: access.scopes,
        resource: new URL(audience),
        resourceMetadataUrl: metadataUrl,
        extra: { [STATE_KEY]: state },
      };
      const response = await readResponse(await handler.fetch(webRequest(context, request), { authInfo, parsedBody: request.body }));
      // No such tool (asking for a wallet tool, say): the SDK answers the error; the attempt is audited
      // here, once the SDK has taken the message (one it refuses as malformed, 400, is no call).
      if (call && response.status === 200 && !TOOL_NAMES.has(call.name))
        await auditOnRequest(context, state, { tool: call.name.slice(0, 100), outcome: 'refused', reason: 'unknown_tool', arguments: call.arguments });
      // A call whose audit row could not be written is answered an error (503 when the database
      // cannot be reached), never what the SDK made of it.
      if (state.auditFailure !== undefined) throw state.auditFailure;
      // The grant's last use, when it was due, is written before the answer too (nothing else waited for it).
      await caller.touched;
      reply.code(response.status);
      for (const [name, value] of response.headers) reply.header(name, value);
      return reply.send(response.body);
    },
  );

  // Only POST is served (spec E5): every other method is 405, but for the CORS preflight.
  app.options('/mcp', async (_request, reply) => reply.code(204).send());
  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: '/mcp',
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw new TillError('method_not_allowed', { endpoint: 'The MCP endpoint', allowed: 'POST' });
    },
  });
}
