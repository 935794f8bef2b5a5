import type { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { validate } from '../http/validation.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';
import type { Scope } from '../oauth/scopes.ts';
import { callerOf, recordToolCall } from './audit.ts';

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

/**
 * Runs a call the way every tool is run: unknown arguments refused by name, the arguments
 * validated (a refusal names the field), the tool run, and the call audited once with its outcome.
 */
export async function runTool(context: AppContext, access: McpAccess, tool: McpTool, args: unknown): Promise<ToolResult> {
  const caller = { ...callerOf(access), tool: tool.name, arguments: args };
  const audit = (outcome: 'ok' | 'refused' | 'failed', reason: string | null) => recordToolCall(context.db, { ...caller, outcome, reason }, context.now());
  const unknown = unknownArguments(tool, args);
  if (unknown) {
    await audit('refused', 'unknown_argument');
    return errorResult(unknown);
  }
  let recorded = false;
  const call: ToolCall = {
    async recordSuccess(db) {
      await recordToolCall(db, { ...caller, outcome: 'ok', reason: null }, context.now());
      recorded = true;
    },
  };
  try {
    const output = await tool.run(context, access, validate(tool.input, args ?? {}), call);
    if (!recorded) await audit('ok', null);
    return { content: [{ type: 'text', text: JSON.stringify(output, null, 2) }], structuredContent: output };
  } catch (error) {
    if (error instanceof ToolRefusal) {
      await audit('refused', error.reason);
      return errorResult(error.message);
    }
    if (error instanceof TillError && error.status < 500) {
      await audit('refused', error.code);
      return errorResult(`${tool.name} refused the call: ${error.message}`);
    }
    await audit('failed', error instanceof TillError ? error.code : 'internal_error');
    context.log.error({ err: error, tool: tool.name }, 'MCP tool failed');
    return errorResult(error instanceof TillError ? error.message : `${tool.name} failed on the server. Try again later.`);
  }
}
