import { type Kysely, sql } from 'kysely';

/**
 * A payout wallet per mode: `wallet_address` is the live one, `test_wallet_address` the one test
 * payments (fake money) go to. Until now `wallet_address` was the wallet of whatever mode the
 * deployment ran in, so each merchant's is mapped from its own history (docs/decisions.md, "A payout
 * wallet per mode"): it becomes the test wallet of every merchant, and stays the live wallet only of
 * a merchant that has run live (a live API key, revoked or not, or a live session). A merchant only
 * ever seen in the sandbox (the demo merchant among them, paid to a key left on the server's disk)
 * has no live wallet until one is set: live money never goes to a wallet chosen for fake money.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('merchants').addColumn('test_wallet_address', 'text').execute();
  await sql`UPDATE merchants SET test_wallet_address = wallet_address`.execute(db);
  await sql`UPDATE merchants SET wallet_address = NULL
    WHERE wallet_address IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.merchant_id = merchants.id AND k.mode = 'live')
      AND NOT EXISTS (SELECT 1 FROM payment_sessions s WHERE s.merchant_id = merchants.id AND s.mode = 'live')`.execute(db);
}

/** Down again: one wallet, the live one where there is one, else the test one (as a sandbox deployment had it). */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`UPDATE merchants SET wallet_address = test_wallet_address WHERE wallet_address IS NULL`.execute(db);
  await db.schema.alterTable('merchants').dropColumn('test_wallet_address').execute();
}
