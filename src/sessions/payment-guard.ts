import type { Db } from '../db/index.ts';

/** Whether a payment of the session is claimed but not yet resolved (settlement under way). */
export async function hasPaymentInProgress(db: Db, sessionId: string): Promise<boolean> {
  const row = await db.selectFrom('payment_sessions').select('payments_in_progress').where('id', '=', sessionId).executeTakeFirst();
  return (row?.payments_in_progress ?? 0) > 0;
}
