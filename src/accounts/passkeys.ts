import type { Db } from '../db/index.ts';

/** Removes every passkey of a user (an operator's reset of their second factors); how many there were. */
export async function removeAllPasskeys(db: Db, userId: string): Promise<number> {
  const removed = await db.deleteFrom('user_passkeys').where('user_id', '=', userId).executeTakeFirst();
  return Number(removed.numDeletedRows);
}
