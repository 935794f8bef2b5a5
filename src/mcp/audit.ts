import { createHash } from 'node:crypto';
import { CompiledQuery, type Insertable, PostgresAdapter, type Selectable } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import { type Db, isDatabaseUnavailable } from '../db/index.ts';
import { namedStatements } from '../db/prepared.ts';
import type { McpToolCallsTable } from '../db/schema.ts';
import { writeLastUse } from '../oauth/grants.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';
import { GroupCommit } from './group-commit.ts';

export type AuditOutcome = 'ok' | 'refused' | 'failed';

/** Who made a call, and in which mode: what the access token and its grant say. */
export type Caller = { grantId: string; clientId: string; merchantId: string; mode: Mode };

export const callerOf = (access: McpAccess): Caller => ({
  grantId: access.grant.id,
  clientId: access.grant.clientId,
  merchantId: access.grant.merchantId,
  mode: access.grant.mode,
});

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

type AuditRow = Insertable<McpToolCallsTable>;
type CallToAudit = Omit<AuditedCall, 'argumentsSha256' | 'createdAt'> & { arguments: unknown };

const auditRow = (call: CallToAudit, now: number): AuditRow => ({
  id: newId('call_'),
  created_at: now,
  grant_id: call.grantId,
  client_id: call.clientId,
  merchant_id: call.merchantId,
  mode: call.mode,
  tool: call.tool,
  outcome: call.outcome,
  reason: call.reason,
  arguments_sha256: argumentsDigest(call.arguments),
});

/**
 * Audits one call with its own INSERT, on `db`, which may be a transaction: a tool that audits its
 * success inside the transaction of what it did (create_api_key) uses this.
 */
export async function recordToolCall(db: Db, call: CallToAudit, now: number): Promise<void> {
  await db.insertInto('mcp_tool_calls').values(auditRow(call, now)).execute();
}

// Many rows in one statement whose text never changes, from one JSON parameter: SQLite reads it
// with json_each, PostgreSQL with json_to_recordset (and prepares it once per connection).
const COLUMNS = ['id', 'created_at', 'grant_id', 'client_id', 'merchant_id', 'mode', 'tool', 'outcome', 'reason', 'arguments_sha256'] as const;
const SQLITE_BATCH = `INSERT INTO mcp_tool_calls (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map((column) => `value ->> '${column}'`).join(', ')} FROM json_each(?)`;
const POSTGRES_BATCH = `INSERT INTO mcp_tool_calls (${COLUMNS.join(', ')}) SELECT ${COLUMNS.join(', ')} FROM json_to_recordset($1::json) AS r(${COLUMNS.map((column) => `${column} ${column === 'created_at' ? 'bigint' : 'text'}`).join(', ')})`;
namedStatements.set(POSTGRES_BATCH, 'till_mcp_audit_batch');

/** What the group commit writes: a call's audit row, or a grant's last use (`oauth_grants.last_used_at`). */
type Write = { row: AuditRow } | { touch: { grantId: string; at: number } };

/**
 * One batch: the audit rows in one INSERT, and the grants' last uses (at most once a minute per
 * grant) in the same transaction, so they share its commit (on SQLite, its fsync).
 */
async function writeBatch(db: Db, postgres: boolean, writes: Write[]): Promise<void> {
  const rows: AuditRow[] = [];
  const touches = new Map<string, number>();
  for (const write of writes) {
    if ('row' in write) rows.push(write.row);
    else touches.set(write.touch.grantId, Math.max(write.touch.at, touches.get(write.touch.grantId) ?? 0));
  }
  const insert = CompiledQuery.raw(postgres ? POSTGRES_BATCH : SQLITE_BATCH, [JSON.stringify(rows)]);
  if (touches.size === 0) {
    await db.executeQuery(insert);
    return;
  }
  await db.transaction().execute(async (trx) => {
    if (rows.length > 0) await trx.executeQuery(insert);
    for (const [grantId, at] of touches) await writeLastUse(trx, grantId, at);
  });
}

/** A batch's rows at most (a few hundred fit well inside one statement on both engines). */
const MAX_BATCH = 256;

const writers = new WeakMap<Db, GroupCommit<Write>>();

/**
 * PostgreSQL: batches written at once. A commit waits for the WAL's flush in the database, which
 * groups concurrent commits itself, so a few batches in flight keep a call from waiting for the
 * batch before its own, leaving the rest of the pool to the calls' reads. SQLite writes on one
 * connection, one batch at a time.
 */
const POSTGRES_BATCHES_IN_FLIGHT = 3;

function writerOf(db: Db): GroupCommit<Write> {
  let writer = writers.get(db);
  if (!writer) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // A database that cannot be reached, or a statement whose answer was lost, fails the whole
    // batch: its rows may have been written, so none is written again on its own.
    writer = new GroupCommit((writes) => writeBatch(db, postgres, writes), {
      isFinal: isDatabaseUnavailable,
      maxBatch: MAX_BATCH,
      concurrency: postgres ? POSTGRES_BATCHES_IN_FLIGHT : 1,
    });
    writers.set(db, writer);
  }
  return writer;
}

/**
 * Audits a call on the request path: its row is committed with those of the calls audited at the
 * same moment, in one statement (group commit: on SQLite with `synchronous = FULL` one fsync for
 * all of them, on PostgreSQL one round trip), and the promise settles only once that statement has
 * committed, so a call is answered only after its row is durable. A failed write rejects, and the
 * call must then be answered an error, never its result.
 */
export function auditCall(db: Db, call: CallToAudit, now: number): Promise<void> {
  return writerOf(db).add({ row: auditRow(call, now) });
}

/**
 * Writes a grant's last use with the next batch of audit rows (it shares their commit). The
 * merchant's list shows it to the minute; the call's tool does not wait for it, its answer does.
 */
export function touchGrantLater(db: Db, grantId: string, at: number): Promise<void> {
  return writerOf(db).add({ touch: { grantId, at } });
}

/** Audits a call refused before its tool ran (scope, limit, revoked grant, unknown tool). */
export const recordRefusal = (context: Pick<AppContext, 'db' | 'now'>, caller: Caller, tool: string, reason: string, args: unknown) =>
  auditCall(context.db, { ...caller, tool: tool.slice(0, 100), outcome: 'refused', reason, arguments: args }, context.now());

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
  mode: row.mode,
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
export type ToolCallFilter = { grantId?: string; tool?: string; outcome?: AuditOutcome; mode?: Mode };

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
    .$if(filter.mode !== undefined, (qb) => qb.where('mode', '=', filter.mode!))
    .$if(paging.after !== undefined, (qb) => qb.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(paging.after!.createdAt, paging.after!.id))))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(paging.size + 1)
    .execute();
  const calls = rows.slice(0, paging.size).map((row) => ({ ...auditedCallOf(row), id: row.id }));
  const last = calls.at(-1);
  return { calls, next: rows.length > paging.size && last ? { createdAt: last.createdAt, id: last.id } : undefined };
}
