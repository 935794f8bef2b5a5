import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import { type GrantRefusal, grantRefusal, otherMode } from '../oauth/credential-modes.ts';
import { GRANT_COLUMNS, orderedScopes, toGrant, touchDue } from '../oauth/grants.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';
import { type McpTokenClaims, verifyMcpToken } from '../oauth/tokens.ts';
import { type Caller, callerOf, touchGrantLater } from './audit.ts';
import { HOUR_MS } from './limits.ts';

/**
 * The grant, while active, and its calls of the last hour that count against its hourly limit, in
 * one statement (one round trip on PostgreSQL): what every MCP request reads. Calls refused by the
 * limit itself do not count (see countedCallsSince, which must agree).
 */
const grantWithCountedCalls = prepareQuery((db: Db, params: { grantId: string; since: number }) =>
  db
    .selectFrom('oauth_grants as g')
    .select(GRANT_COLUMNS.map((column) => `g.${column}` as const))
    .select((eb) =>
      eb
        .selectFrom('mcp_tool_calls as c')
        .select(eb.fn.countAll<number | string | bigint>().as('n'))
        .where('c.grant_id', '=', params.grantId)
        .where('c.created_at', '>', params.since)
        .where((c) => c.or([c('c.reason', 'is', null), c('c.reason', '!=', 'rate_limited')]))
        .as('counted_calls'),
    )
    .where('g.id', '=', params.grantId)
    .where('g.revoked_at', 'is', null),
);

/** What a bearer token gives on the MCP endpoint right now. */
export type CallerAccess =
  /** Not an access token for this endpoint, or expired. */
  | { kind: 'invalid' }
  /** A good token whose grant was revoked (or no longer matches it): refused, and audited when it was a tool call. */
  | { kind: 'revoked'; caller: Caller }
  /** A good token of an active grant this deployment refuses (its mode not served, or a development client): refused, named, audited. */
  | { kind: 'refused'; caller: Caller; refusal: GrantRefusal }
  /** The access, the grant's counted calls in the last hour, and the write of its last use when one is due (to await before answering). */
  | { kind: 'active'; access: McpAccess; countedCalls: number; touched: Promise<void> | undefined };

/**
 * The access a bearer token gives: its signature and claims (verified once per token, then
 * remembered until it expires), then the grant re-read on every request, so a revocation refuses
 * the very next call, together with the grant's counted calls of the last hour.
 */
export async function callerAccess(context: AppContext, token: string): Promise<CallerAccess> {
  const now = context.now();
  const claims = await verifyMcpToken(context.db, context.config, token, now);
  if (!claims) return { kind: 'invalid' };
  const row = await grantWithCountedCalls.executeTakeFirst(context.db, { grantId: claims.grantId, since: now - HOUR_MS });
  if (!row) return { kind: 'revoked', caller: await revokedCaller(context.db, claims) };
  const grant = toGrant(row);
  if (grant.merchantId !== claims.merchantId || grant.clientId !== claims.clientId || otherMode(claims.mode, grant.mode))
    return { kind: 'revoked', caller: await revokedCaller(context.db, claims) };
  const refusal = grantRefusal(context.config, grant);
  if (refusal) return { kind: 'refused', caller: callerOf({ grant, scopes: [] }), refusal };
  // The last use is written with the next batch of audit rows; the request waits for it only before answering.
  const touched = touchDue(grant, now)
    ? touchGrantLater(context.db, grant.id, now).catch((error: unknown) =>
        context.log.warn({ err: error, grantId: grant.id }, 'A grant’s last use was not written'),
      )
    : undefined;
  const scopes = orderedScopes(claims.scopes.filter((scope) => (grant.scopes as string[]).includes(scope)));
  return { kind: 'active', access: { grant, scopes }, countedCalls: Number(row.counted_calls), touched };
}

/** Who presented a token of a revoked grant, in the grant's mode (a token issued before modes names none). */
async function revokedCaller(db: Db, claims: McpTokenClaims): Promise<Caller> {
  const mode = claims.mode ?? (await db.selectFrom('oauth_grants').select('mode').where('id', '=', claims.grantId).executeTakeFirst())?.mode ?? 'sandbox';
  return { grantId: claims.grantId, clientId: claims.clientId, merchantId: claims.merchantId, mode };
}
