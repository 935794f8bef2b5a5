import { createHash } from 'node:crypto';
import { newId } from '../common/ids.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
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
  return rows.map((row) => ({
    grantId: row.grant_id,
    clientId: row.client_id,
    merchantId: row.merchant_id,
    tool: row.tool,
    outcome: row.outcome,
    reason: row.reason,
    argumentsSha256: row.arguments_sha256,
    createdAt: row.created_at,
  }));
}
