import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { type AuthInfo, createMcpHandler } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { addRoute } from '../http/routes.ts';
import { type McpAccess, mcpAccess } from '../oauth/mcp-access.ts';
import { DEFAULT_SCOPES } from '../oauth/scopes.ts';
import { mcpAudience, verifyMcpToken } from '../oauth/tokens.ts';
import { callerOf, recordRefusal } from './audit.ts';
import { hourlyLimitRetryAfter, TOOL_CALLS_PER_HOUR } from './limits.ts';
import { buildMcpServer } from './server.ts';
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

const ACCESS_KEY = 'tillAccess';

/** The request as the SDK's web-standard handler takes it (the body is already parsed). */
function webRequest(context: AppContext, request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length' || name === 'host' || name === 'connection' || name === 'transfer-encoding') continue;
    for (const one of [value].flat()) headers.append(name, one);
  }
  return new Request(new URL(request.url, context.config.mcpUrl), { method: 'POST', headers, body: JSON.stringify(request.body ?? null) });
}

async function sendResponse(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    reply.header(name, value);
  });
  if (!response.body) return reply.send();
  return reply.send(Readable.fromWeb(response.body as unknown as NodeReadableStream));
}

export function registerMcpRoutes(app: FastifyInstance, context: AppContext): void {
  app.register(async (scope) => {
    scope.addHook('onRequest', async (_request, reply) => {
      reply.headers(CORS_HEADERS);
    });
    registerMcpEndpoint(scope, context);
  });
}

function registerMcpEndpoint(app: FastifyInstance, context: AppContext): void {
  // One handler for the app; it makes a fresh server per request from the caller's access.
  const handler = createMcpHandler((request) => buildMcpServer(context, request.authInfo?.extra?.[ACCESS_KEY] as McpAccess), {
    legacy: 'stateless',
    onerror: (error) => context.log.warn({ err: error }, 'MCP request refused'),
  });
  app.addHook('onClose', () => handler.close());

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
      const access = await mcpAccess(context, token);
      const call = toolCallOf(request.body);
      if (!access) {
        const claims = await verifyMcpToken(context.db, context.config, token, context.now());
        // A good token of a revoked grant: the refused call is audited like any other.
        if (call && claims) await recordRefusal(context, claims, call.name, 'grant_revoked', call.arguments);
        return unauthorized(
          reply,
          claims
            ? 'the authorization behind this token was revoked; authorize again'
            : 'the token is not an access token for this endpoint, or has expired; refresh it or authorize again',
          true,
        );
      }
      // Batches left JSON-RPC over MCP in 2025-06-18; one would slip its calls past the limit and the audit below.
      if (Array.isArray(request.body))
        return reply
          .code(400)
          .header('content-type', 'application/json')
          .send({
            jsonrpc: '2.0',
            id: null,
            error: { code: INVALID_REQUEST_CODE, message: 'Invalid Request: JSON-RPC batches are not supported; send one message per request' },
          });
      if (call) {
        const retryAfter = await hourlyLimitRetryAfter(context.db, access.grant.id, context.now());
        if (retryAfter !== undefined) {
          await recordRefusal(context, callerOf(access), call.name, 'rate_limited', call.arguments);
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
      const authInfo: AuthInfo = {
        token,
        clientId: access.grant.clientId,
        scopes: access.scopes,
        resource: new URL(mcpAudience(context.config)),
        resourceMetadataUrl: resourceMetadataUrl(context.config),
        extra: { [ACCESS_KEY]: access },
      };
      const response = await handler.fetch(webRequest(context, request), { authInfo, parsedBody: request.body });
      // No such tool (asking for a wallet tool, say): the SDK answers the error; the attempt is audited
      // here, once the SDK has taken the message (one it refuses as malformed, 400, is no call).
      if (call && response.ok && !TOOLS.some((tool) => tool.name === call.name))
        await recordRefusal(context, callerOf(access), call.name, 'unknown_tool', call.arguments);
      return sendResponse(reply, response);
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
