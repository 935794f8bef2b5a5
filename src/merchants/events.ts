import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { findMerchant, setMerchantWallet } from './merchants.ts';

/**
 * The owner of `merchant_events`: the audit of a merchant's sensitive changes. Today one kind, the
 * payout wallet of a mode changed, with who changed it (a user, or the operator's CLI) and from what
 * to what (to nothing: `till live prepare` clears a live wallet whose key the sandbox kept).
 */
export type WalletChange = {
  id: string;
  merchantId: string;
  /** The user who changed it on the dashboard; null when the operator did, from the CLI. */
  userId: string | null;
  /** The mode whose wallet changed; null for a change recorded before wallets had modes. */
  mode: Mode | null;
  from: string | null;
  to: string | null;
  at: number;
};

/**
 * Sets the payout wallet of a mode (null: none) and records the change, in one transaction unless `db` is
 * one already: both or neither. False when there is no such merchant.
 */
export async function changeWallet(
  db: Db,
  input: { merchantId: string; userId: string | null; mode: Mode; walletAddress: string | null },
  now = Date.now(),
): Promise<boolean> {
  const change = async (trx: Db) => {
    const merchant = await findMerchant(trx, input.merchantId);
    if (!merchant) return false;
    await setMerchantWallet(trx, input.merchantId, input.mode, input.walletAddress);
    await trx
      .insertInto('merchant_events')
      .values({
        id: newId('mev_'),
        merchant_id: input.merchantId,
        user_id: input.userId,
        type: 'wallet_changed',
        detail: JSON.stringify({ mode: input.mode, from: merchant.wallets[input.mode], to: input.walletAddress }),
        created_at: now,
      })
      .execute();
    return true;
  };
  return db.isTransaction ? change(db) : db.transaction().execute(change);
}

/** The merchant's latest wallet change at or after `since`, if any. */
export async function latestWalletChange(db: Db, merchantId: string, since: number): Promise<WalletChange | undefined> {
  const row = await db
    .selectFrom('merchant_events')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('type', '=', 'wallet_changed')
    .where('created_at', '>=', since)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  const detail = JSON.parse(row.detail) as { mode?: Mode; from: string | null; to: string | null };
  return {
    id: row.id,
    merchantId: row.merchant_id,
    userId: row.user_id,
    mode: detail.mode ?? null,
    from: detail.from,
    to: detail.to,
    at: Number(row.created_at),
  };
}
