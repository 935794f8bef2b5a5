import { createHash } from 'node:crypto';
import type { Selectable } from 'kysely';
import { newId } from '../common/ids.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import type { McpToolCallsTable } from '../db/schema.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';

export type AuditOutcome = 'ok' | 'refused' | 'failed';

/** Who made a call: what the access token and its grant say. */
export type Caller = { grantId: string; clientId: string; merchantId: string };

export const callerOf = (access: McpAccess): Caller => ({ grantId: access.grant.id, clientId: access.grant.clientId, merchantId: access.grant.merchantId });

export type AuditedCall = Caller & { tool: string; outcome: AuditOutcome; reason: string | null; argumentsSha256: string; createdAt: number };

/** JSON with object keys sorted, so equal arguments give equal digests whatever their order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/** The audit keeps this, never the arguments themselves. */
export const argumentsDigest = (args: unknown) =>
  createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('hex');

export async function recordToolCall(db: Db, call: Omit<AuditedCall, 'argumentsSha256' | 'createdAt'> & { arguments: unknown }, now: number): Promise<void> {
  await db
    .insertInto('mcp_tool_calls')
    .values({
      id: newId('call_'),
      created_at: now,
      grant_id: call.grantId,
      client_id: call.clientId,
      merchant_id: call.merchantId,
      tool: call.tool,
      outcome: call.outcome,
      reason: call.reason,
      arguments_sha256: argumentsDigest(call.arguments),
    })
    .execute();
}

/** Audits a call refused before its tool ran (scope, limit, revoked grant, unknown tool). */
export const recordRefusal = (context: Pick<AppContext, 'db' | 'now'>, caller: Caller, tool: string, reason: string, args: unknown) =>
  recordToolCall(context.db, { ...caller, tool: tool.slice(0, 100), outcome: 'refused', reason, arguments: args }, context.now());

/**
 * The grant's calls since a time that count against its hourly limit, oldest first: calls refused
 * by the limit itself do not count, or a client retrying too early would never get back in.
 */
export async function countedCallsSince(db: Db, grantId: string, since: number): Promise<{ count: number; oldest: number | undefined }> {
  const row = await db
    .selectFrom('mcp_tool_calls')
    .select((eb) => [eb.fn.countAll<number | string | bigint>().as('count'), eb.fn.min<number | string | bigint | null>('created_at').as('oldest')])
    .where('grant_id', '=', grantId)
    .where('created_at', '>', since)
    .where((eb) => eb.or([eb('reason', 'is', null), eb('reason', '!=', 'rate_limited')]))
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), oldest: row.oldest === null ? undefined : Number(row.oldest) };
}

/** Successful calls of one tool by a grant since a time (the API key creation limit). */
export async function successfulCallsSince(db: Db, grantId: string, tool: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('mcp_tool_calls')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('count'))
    .where('grant_id', '=', grantId)
    .where('tool', '=', tool)
    .where('outcome', '=', 'ok')
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

const auditedCallOf = (row: Selectable<McpToolCallsTable>): AuditedCall => ({
  grantId: row.grant_id,
  clientId: row.client_id,
  merchantId: row.merchant_id,
  tool: row.tool,
  outcome: row.outcome,
  reason: row.reason,
  argumentsSha256: row.arguments_sha256,
  createdAt: Number(row.created_at),
});

/** A merchant's audited calls, newest first. */
export async function listToolCalls(db: Db, merchantId: string, limit: number): Promise<AuditedCall[]> {
  const rows = await db
    .selectFrom('mcp_tool_calls')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(auditedCallOf);
}

export const AUDIT_OUTCOMES: readonly AuditOutcome[] = ['ok', 'refused', 'failed'];

/** What the merchant's audit log is narrowed to. */
export type ToolCallFilter = { grantId?: string; tool?: string; outcome?: AuditOutcome };

/** Where a page of the audit log ends: the next page starts after this call. */
export type ToolCallCursor = { createdAt: number; id: string };

export type ToolCallsSlice = { calls: (AuditedCall & { id: string })[]; next: ToolCallCursor | undefined };

/**
 * A merchant's audited calls, newest first, filtered, one slice after `after` (keyset paging, from
 * the merchant's or the grant's index; `next` is absent on the last slice).
 */
export async function searchToolCalls(
  db: Db,
  merchantId: string,
  filter: ToolCallFilter,
  paging: { after?: ToolCallCursor; size: number },
): Promise<ToolCallsSlice> {
  const rows = await db
    .selectFrom('mcp_tool_calls')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .$if(filter.grantId !== undefined, (qb) => qb.where('grant_id', '=', filter.grantId!))
    .$if(filter.tool !== undefined, (qb) => qb.where('tool', '=', filter.tool!))
    .$if(filter.outcome !== undefined, (qb) => qb.where('outcome', '=', filter.outcome!))
    .$if(paging.after !== undefined, (qb) => qb.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(paging.after!.createdAt, paging.after!.id))))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(paging.size + 1)
    .execute();
  const calls = rows.slice(0, paging.size).map((row) => ({ ...auditedCallOf(row), id: row.id }));
  const last = calls.at(-1);
  return { calls, next: rows.length > paging.size && last ? { createdAt: last.createdAt, id: last.id } : undefined };
}
