import type { Db } from '../../db/index.ts';
import { listGrants, revokeGrant } from '../../oauth/grants.ts';

/**
 * What a password change or reset offers to end beyond web sessions: someone who knew the old
 * password may have authorized a coding agent, whose grant (and every MCP token of it) outlives the
 * sessions. Revokes every active grant of the merchant; the number revoked. Used by the account
 * page and `till users reset-password`.
 */
export async function revokeEveryGrant(db: Db, merchantId: string, now: number): Promise<number> {
  let revoked = 0;
  for (const grant of await listGrants(db, merchantId)) if (await revokeGrant(db, grant.id, 'merchant', now, merchantId)) revoked++;
  return revoked;
}
