import type { AppContext } from '../context.ts';
import { grantRefusal, otherMode } from './credential-modes.ts';
import { activeGrant, type Grant, orderedScopes, touchGrant } from './grants.ts';
import type { Scope } from './scopes.ts';
import { verifyMcpToken } from './tokens.ts';

/** What a coding agent's token allows right now: its grant (re-read on every call) and the scopes it carries. */
export type McpAccess = { grant: Grant; scopes: Scope[] };

/**
 * The access a bearer token gives on the MCP endpoint, or undefined: not ours, not for
 * `{mcp_url}/mcp`, expired, its grant revoked (checked on every call, so revocation is immediate),
 * or its grant refused here (credential-modes.ts). The endpoint itself reads it with mcp/access.ts.
 */
export async function mcpAccess(context: AppContext, token: string): Promise<McpAccess | undefined> {
  const now = context.now();
  const claims = await verifyMcpToken(context.db, context.config, token, now);
  if (!claims) return undefined;
  const grant = await activeGrant(context.db, claims.grantId);
  if (!grant || grant.merchantId !== claims.merchantId || grant.clientId !== claims.clientId) return undefined;
  if (otherMode(claims.mode, grant.mode) || grantRefusal(context.config, grant)) return undefined;
  await touchGrant(context.db, grant, now);
  return { grant, scopes: orderedScopes(claims.scopes.filter((scope) => (grant.scopes as string[]).includes(scope))) };
}

/** RFC 7009: the grant behind a coding agent's token (refresh or access) that this client may revoke. */
export async function grantOfAccessToken(context: AppContext, token: string, clientId: string): Promise<string | undefined> {
  const claims = await verifyMcpToken(context.db, context.config, token, context.now());
  return claims && claims.clientId === clientId ? claims.grantId : undefined;
}
