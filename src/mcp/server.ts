import { McpServer, type ScopeChallengeHandler, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { RailsByMode } from '../chain/rails.ts';
import type { AppContext } from '../context.ts';
import { orderedScopes } from '../oauth/grants.ts';
import type { Scope } from '../oauth/scopes.ts';
import { QUICKSTART_SCOPE, QUICKSTART_URI, quickstartMarkdown } from './quickstart.ts';
import { auditOnRequest, type McpRequestState, type McpTool, runTool } from './tool.ts';
import { TOOLS } from './tools.ts';

export const SERVER_INFO = { name: 'till', title: 'Till payments', version: '0.1.0' };

type JsonSchemaOptions = { target: string };
type JsonSchemaConverter = { input(options: JsonSchemaOptions): Record<string, unknown>; output(options: JsonSchemaOptions): Record<string, unknown> };

/**
 * A schema's JSON Schema, converted once per target and shared, frozen, by every server: the
 * endpoint builds a server per request, and the SDK converts a tool's schemas on each call
 * (`tools/call` projects the result with the output schema).
 */
function convertedOnce(schema: z.ZodObject): JsonSchemaConverter {
  const converter = schema['~standard'].jsonSchema as unknown as JsonSchemaConverter;
  const converted = new Map<string, Record<string, unknown>>();
  const once = (io: 'input' | 'output', options: JsonSchemaOptions) => {
    const key = `${io} ${options.target}`;
    let json = converted.get(key);
    if (!json) {
      json = deepFreeze(converter[io](options));
      converted.set(key, json);
    }
    return json;
  };
  return { input: (options) => once('input', options), output: (options) => once('output', options) };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * The tool's argument schema as the SDK sees it: its JSON Schema for tools/list, and a validation
 * that lets every value through, so our own step refuses unknown arguments by name, names the bad
 * field, and audits the refusal (the SDK's validation would answer before any of that).
 */
function advertisedOnly(schema: z.ZodObject): StandardSchemaWithJSON {
  return {
    '~standard': { version: 1, vendor: 'till', validate: (value: unknown) => ({ value }), jsonSchema: convertedOnce(schema) },
  } as unknown as StandardSchemaWithJSON;
}

/** The tool's result schema as the SDK sees it: checked by zod on every result, converted to JSON Schema once. */
function checkedResult(schema: z.ZodObject): StandardSchemaWithJSON {
  const standard = schema['~standard'];
  return {
    '~standard': { version: 1, vendor: standard.vendor, validate: (value: unknown) => standard.validate(value), jsonSchema: convertedOnce(schema) },
  } as unknown as StandardSchemaWithJSON;
}

/** Each tool's schemas as the SDK takes them, made once for every server. */
const SCHEMAS = new Map(TOOLS.map((tool) => [tool.name, { input: advertisedOnly(tool.input), output: checkedResult(tool.output) }]));

/**
 * A call needing a scope the grant lacks gets HTTP 403 with one challenge naming every scope the
 * client needs (what it holds and what is missing), so it re-authorizes in one round; the refusal
 * is audited here, since the tool never runs.
 */
function requireScope(context: AppContext, state: McpRequestState, scope: Scope, what: string): ScopeChallengeHandler {
  return async ({ request }) => {
    const { scopes: held } = state.access;
    if (held.includes(scope)) return undefined;
    const params = (request.params ?? {}) as { arguments?: unknown };
    await auditOnRequest(context, state, { tool: what.slice(0, 100), outcome: 'refused', reason: 'insufficient_scope', arguments: params.arguments ?? {} });
    const scopes = orderedScopes([...held, scope]) as [string, ...string[]];
    return { scopes, errorDescription: `${what} needs the scope ${scope}` };
  };
}

const describe = (tool: McpTool) => `${tool.description} Needs the scope ${tool.scope}.`;

const INSTRUCTIONS =
  'Till payments for this merchant account: read settings, paid orders and payment sessions, create payment links and API keys, and refund payments within the limits the merchant set, as the scopes you were granted allow.';

/**
 * A fresh server for one request, bound to the caller's access (the endpoint is stateless). A
 * request that calls a tool (`state.calling`) gets a server with that tool alone, all such a call
 * looks up (a name that is no tool gets none, and the SDK's "not found"); any other request gets
 * every tool and the quickstart.
 */
export function buildMcpServer(context: AppContext, state: McpRequestState, rails: RailsByMode): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {}, resources: {} },
    instructions: INSTRUCTIONS,
  });
  const calling = state.calling;
  for (const tool of calling === undefined ? TOOLS : TOOLS.filter((one) => one.name === calling)) {
    const schemas = SCHEMAS.get(tool.name)!;
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: describe(tool),
        inputSchema: schemas.input,
        outputSchema: schemas.output,
        scopeChallenge: requireScope(context, state, tool.scope, tool.name),
      },
      (args: unknown) => runTool(context, state, tool, args, rails),
    );
  }
  if (calling !== undefined) return server;
  server.registerResource(
    'quickstart',
    QUICKSTART_URI,
    {
      title: 'Quickstart',
      description: `How to take payments with this account, from its live settings. Needs the scope ${QUICKSTART_SCOPE}.`,
      mimeType: 'text/markdown',
      scopeChallenge: requireScope(context, state, QUICKSTART_SCOPE, QUICKSTART_URI),
    },
    async (uri: URL) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await quickstartMarkdown(context, state.access) }] }),
  );
  return server;
}
