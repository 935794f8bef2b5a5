// Migration 0027 on a database as the previous release wrote it (one payout wallet, of whatever mode
// the deployment ran in): every wallet becomes its merchant's test wallet, and stays the live one
// only for a merchant that has run live. Both engines.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest, migrationsWith } from '../db/migrate.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { newAccount } from '../testing/payer.ts';
import { createApiKey } from './api-keys.ts';
import { findMerchant } from './merchants.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`payout wallets per mode on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test('0027 keeps a live merchant’s wallet as its live one, and a sandbox-only merchant’s (the demo’s) as its test one only', async () => {
      const { db } = service.context;
      // Back to the schema before 0027: every later change undone, newest first, and forgotten.
      const migrations = migrationsWith(service.config.secretKey);
      const since0027 = Object.keys(migrations).filter((name) => name >= '0027');
      for (const name of since0027.toReversed()) await migrations[name]!.down!(db);
      await sql`DELETE FROM kysely_migration WHERE name IN (${sql.join(since0027)})`.execute(db);

      const [liveWallet, sandboxWallet, sessionWallet] = [newAccount().address, newAccount().address, newAccount().address];
      const insert = (id: string, wallet: string | null) =>
        sql`INSERT INTO merchants (id, name, wallet_address, created_at) VALUES (${id}, ${id}, ${wallet}, ${Date.now()})`.execute(db);
      // Ran live: a live key (revoked since). Ran in the sandbox only: a test key. Live through a session only. None set.
      await insert('mer_live', liveWallet);
      await createApiKey(db, 'mer_live', 'test');
      await sql`UPDATE api_keys SET revoked_at = 1 WHERE id = ${(await createApiKey(db, 'mer_live', 'live')).keyId}`.execute(db);
      await insert('mer_sandbox', sandboxWallet);
      await createApiKey(db, 'mer_sandbox', 'test');
      await insert('mer_session', sessionWallet);
      await sql`INSERT INTO payment_sessions (id, merchant_id, order_type, status, amount_minor, currency, version, created_at, updated_at, mode, editable)
        SELECT 'ps_live_only', 'mer_session', 'STATIC', 'OPEN', 100, 'USD', 1, 1, 1, 'live', 0`.execute(db);
      await insert('mer_none', null);

      assert.deepEqual(await migrateToLatest(db, { secretKey: service.config.secretKey }), since0027);
      const wallets = async (id: string) => (await findMerchant(db, id))?.wallets;
      assert.deepEqual(await wallets('mer_live'), { sandbox: liveWallet, live: liveWallet });
      assert.deepEqual(await wallets('mer_sandbox'), { sandbox: sandboxWallet, live: null }, 'a wallet chosen in the sandbox is never a live one');
      assert.deepEqual(await wallets('mer_none'), { sandbox: null, live: null });
      assert.deepEqual(await wallets('mer_session'), { sandbox: sessionWallet, live: sessionWallet });
    });
  });
}
