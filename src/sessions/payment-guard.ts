import type { Db } from '../db/index.ts';

/** Whether a payment of the session is claimed but not yet resolved (settlement under way). */
export async function hasPaymentInProgress(_db: Db, _sessionId: string): Promise<boolean> {
  return false;
}
