import type { Db } from '../db/index.ts';
import { newId } from '../common/ids.ts';

export type Merchant = { id: string; name: string; walletAddress: string | null; createdAt: number };

export const WALLET_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export async function createMerchant(db: Db, input: { name: string; walletAddress?: string | null }, now = Date.now()): Promise<Merchant> {
  const merchant = { id: newId('mer_'), name: input.name, walletAddress: input.walletAddress ?? null, createdAt: now };
  await db.insertInto('merchants').values({ id: merchant.id, name: merchant.name, wallet_address: merchant.walletAddress, created_at: now }).execute();
  return merchant;
}

export async function findMerchant(db: Db, id: string): Promise<Merchant | undefined> {
  const row = await db.selectFrom('merchants').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { id: row.id, name: row.name, walletAddress: row.wallet_address, createdAt: row.created_at };
}

/** The payout wallet is set only by the operator or the dashboard, never over the payment API. */
export async function setMerchantWallet(db: Db, id: string, walletAddress: string): Promise<boolean> {
  const result = await db.updateTable('merchants').set({ wallet_address: walletAddress }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function countMerchants(db: Db): Promise<number> {
  const row = await db.selectFrom('merchants').select((eb) => eb.fn.countAll<number | bigint>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}
