import type { z } from 'zod';
import type { RailsByMode } from '../chain/rails.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { validate } from '../http/validation.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';
import type { Scope } from '../oauth/scopes.ts';
import { auditCall, type Caller, callerOf, recordToolCall } from './audit.ts';

/** One MCP tool: its scope, its strict argument schema, its documented result, and what it does. */
export type McpTool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  /** What it does, in a line; the scope it needs is appended for tools/list. */
  description: string;
  scope: Scope;
  input: I;
  output: O;
  run(context: AppContext, access: McpAccess, args: z.output<I>, call: ToolCall): Promise<z.output<O>>;
};

/** What a running tool may do with its own call. */
export type ToolCall = {
  /**
   * Audits the call as done, in the tool's own transaction (`db`), so a limit counted from the audit
   * sees it as soon as what it did is seen; the call is then not audited again.
   */
  recordSuccess(db: Db): Promise<void>;
  /** Each mode's facilitator and chain, which a refund goes through. */
  rails: RailsByMode;
};

export const defineTool = <I extends z.ZodObject, O extends z.ZodObject>(tool: McpTool<I, O>): McpTool => tool as unknown as McpTool;

/** A tool's refusal of a call (a limit, an argument the account cannot take): an error result naming why. */
export class ToolRefusal extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

const errorResult = (message: string): ToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** Arguments not in the tool's schema, refused by name before anything runs. */
function unknownArguments(tool: McpTool, args: unknown): string | undefined {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  const accepted = Object.keys(tool.input.shape);
  const unknown = Object.keys(args).filter((name) => !accepted.includes(name));
  if (!unknown.length) return undefined;
  const list = unknown.map((name) => `"${name}"`).join(', ');
  return `${tool.name} refused the unknown argument${unknown.length > 1 ? 's' : ''} ${list}; nothing was done. It accepts: ${accepted.join(', ') || 'no arguments'}.`;
}

/** One request on the MCP endpoint: the caller's access, and whether auditing its call failed. */
export type McpRequestState = {
  access: McpAccess;
  /** The tool the request calls, when it is a tool call. */
  calling?: string;
  /**
   * Set when the call's audit row could not be written: the request is then answered this error
   * (503 when the database cannot be reached), never the tool's result.
   */
  auditFailure?: unknown;
};

/**
 * Audits a call on the request path (group commit, see auditCall); a failure is kept on the
 * request, which the endpoint answers as an error whatever the SDK made of the call.
 */
export async function auditOnRequest(context: AppContext, state: McpRequestState, call: Omit<Parameters<typeof auditCall>[1], keyof Caller>): Promise<boolean> {
  try {
    await auditCall(context.db, { ...callerOf(state.access), ...call }, context.now());
    return true;
  } catch (error) {
    state.auditFailure ??= error;
    return false;
  }
}

const NOT_RECORDED = 'The call could not be recorded, so it is not answered. Try again later.';

/**
 * Runs a call the way every tool is run: unknown arguments refused by name, the arguments
 * validated (a refusal names the field), the tool run, and the call audited once with its outcome
 * before its result is answered.
 */
export async function runTool(context: AppContext, state: McpRequestState, tool: McpTool, args: unknown, rails: RailsByMode): Promise<ToolResult> {
  let recorded = false;
  const call: ToolCall = {
    rails,
    async recordSuccess(db) {
      await recordToolCall(db, { ...callerOf(state.access), tool: tool.name, arguments: args, outcome: 'ok', reason: null }, context.now());
      recorded = true;
    },
  };
  const { result, outcome, reason } = await outcomeOf(context, state.access, tool, args, call);
  await context.faultHook?.('mcp:after-tool');
  // A tool that audited its success in its own transaction is not audited again; one that failed
  // after (its transaction rolled back) is.
  if (recorded && outcome === 'ok') return result;
  const audited = await auditOnRequest(context, state, { tool: tool.name, arguments: args, outcome, reason });
  return audited ? result : errorResult(NOT_RECORDED);
}

async function outcomeOf(
  context: AppContext,
  access: McpAccess,
  tool: McpTool,
  args: unknown,
  call: ToolCall,
): Promise<{ result: ToolResult; outcome: 'ok' | 'refused' | 'failed'; reason: string | null }> {
  const unknown = unknownArguments(tool, args);
  if (unknown) return { result: errorResult(unknown), outcome: 'refused', reason: 'unknown_argument' };
  try {
    const output = await tool.run(context, access, validate(tool.input, args ?? {}), call);
    return { result: { content: [{ type: 'text', text: JSON.stringify(output, null, 2) }], structuredContent: output }, outcome: 'ok', reason: null };
  } catch (error) {
    if (error instanceof ToolRefusal) return { result: errorResult(error.message), outcome: 'refused', reason: error.reason };
    if (error instanceof TillError && error.status < 500)
      return { result: errorResult(`${tool.name} refused the call: ${error.message}`), outcome: 'refused', reason: error.code };
    context.log.error({ err: error, tool: tool.name }, 'MCP tool failed');
    return {
      result: errorResult(error instanceof TillError ? error.message : `${tool.name} failed on the server. Try again later.`),
      outcome: 'failed',
      reason: error instanceof TillError ? error.code : 'internal_error',
    };
  }
}
