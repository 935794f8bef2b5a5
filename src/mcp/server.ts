import { McpServer, type ScopeChallengeHandler, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import { orderedScopes } from '../oauth/grants.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';
import type { Scope } from '../oauth/scopes.ts';
import { callerOf, recordRefusal } from './audit.ts';
import { QUICKSTART_SCOPE, QUICKSTART_URI, quickstartMarkdown } from './quickstart.ts';
import { type McpTool, runTool } from './tool.ts';
import { TOOLS } from './tools.ts';

export const SERVER_INFO = { name: 'till', title: 'Till payments', version: '0.1.0' };

/**
 * The tool's schema as the SDK sees it: its JSON Schema for tools/list, and a validation that lets
 * every value through, so our own step refuses unknown arguments by name, names the bad field, and
 * audits the refusal (the SDK's validation would answer before any of that).
 */
function advertisedOnly(schema: z.ZodObject): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'till',
      validate: (value: unknown) => ({ value }),
      jsonSchema: schema['~standard'].jsonSchema,
    },
  } as StandardSchemaWithJSON;
}

/**
 * A call needing a scope the grant lacks gets HTTP 403 with one challenge naming every scope the
 * client needs (what it holds and what is missing), so it re-authorizes in one round; the refusal
 * is audited here, since the tool never runs.
 */
function requireScope(context: AppContext, access: McpAccess, scope: Scope, what: string): ScopeChallengeHandler {
  return async ({ request }) => {
    if (access.scopes.includes(scope)) return undefined;
    const params = (request.params ?? {}) as { arguments?: unknown };
    await recordRefusal(context, callerOf(access), what, 'insufficient_scope', params.arguments ?? {});
    const scopes = orderedScopes([...access.scopes, scope]) as [string, ...string[]];
    return { scopes, errorDescription: `${what} needs the scope ${scope}` };
  };
}

const describe = (tool: McpTool) => `${tool.description} Needs the scope ${tool.scope}.`;

/** A fresh server for one request, bound to the caller's access (the endpoint is stateless). */
export function buildMcpServer(context: AppContext, access: McpAccess): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {}, resources: {} },
    instructions:
      'Till payments for this merchant account: read settings and paid orders, create payment links and API keys, as the scopes you were granted allow.',
  });
  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: describe(tool),
        inputSchema: advertisedOnly(tool.input),
        outputSchema: tool.output as unknown as StandardSchemaWithJSON,
        scopeChallenge: requireScope(context, access, tool.scope, tool.name),
      },
      (args: unknown) => runTool(context, access, tool, args),
    );
  }
  server.registerResource(
    'quickstart',
    QUICKSTART_URI,
    {
      title: 'Quickstart',
      description: `How to take payments with this account, from its live settings. Needs the scope ${QUICKSTART_SCOPE}.`,
      mimeType: 'text/markdown',
      scopeChallenge: requireScope(context, access, QUICKSTART_SCOPE, QUICKSTART_URI),
    },
    async (uri: URL) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await quickstartMarkdown(context, access) }] }),
  );
  return server;
}
