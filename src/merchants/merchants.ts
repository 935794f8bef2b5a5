import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';

export type Merchant = { id: string; name: string; walletAddress: string | null; createdAt: number };

export const WALLET_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** What a merchant without a payout wallet is told wherever it acts, with the command that fixes it. */
export function noWalletWarning(merchantId: string): string {
  return `merchant ${merchantId} has no payout wallet, so its sessions cannot be paid (x402 answers 422 no_pay_to) until one is set: till merchant set-wallet ${merchantId} 0xYourAddress`;
}

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
  const row = await db
    .selectFrom('merchants')
    .select((eb) => eb.fn.countAll<number | bigint>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export type MerchantSummary = Merchant & { keys: { keyId: string; mode: 'test' | 'live'; lastFour: string; createdAt: number }[] };

/** Every merchant, oldest first, with its active API keys (ids and last four characters, never the keys). */
export async function listMerchants(db: Db): Promise<MerchantSummary[]> {
  const merchants = await db.selectFrom('merchants').selectAll().orderBy('created_at').orderBy('id').execute();
  const keys = await db
    .selectFrom('api_keys')
    .select(['id', 'merchant_id', 'mode', 'last_four', 'created_at'])
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .execute();
  return merchants.map((row) => ({
    id: row.id,
    name: row.name,
    walletAddress: row.wallet_address,
    createdAt: row.created_at,
    keys: keys
      .filter((key) => key.merchant_id === row.id)
      .map((key) => ({ keyId: key.id, mode: key.mode, lastFour: key.last_four, createdAt: key.created_at })),
  }));
}
