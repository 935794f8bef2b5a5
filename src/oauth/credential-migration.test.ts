// Migration 0026 on a database the previous release made: clients, grants and the audit of their MCP
// calls get the mode of the era they were made in, read from the merchant's API keys; a credential
// made in the sandbox never comes out live.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Migrator, sql } from 'kysely';
import { loadConfig } from '../config.ts';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest, migrationsWith } from '../db/migrate.ts';
import { createServiceStorage } from '../testing/environment.ts';
import { describeOnEngine, engines } from '../testing/harness.ts';

const PREVIOUS_RELEASE = '0025_refunds';

for (const { engine, skip } of engines) {
  describeOnEngine(`migration 0026 gives existing credentials their mode on ${engine}`, skip, () => {
    let storage: Awaited<ReturnType<typeof createServiceStorage>>;
    let database: DatabaseHandle;
    before(async () => {
      storage = await createServiceStorage(engine);
      const config = loadConfig({ ...storage.settings, TILL_LOG_LEVEL: 'silent' });
      database = openDatabase(config);
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrationsWith(config.secretKey) } });
      const { error } = await migrator.migrateTo(PREVIOUS_RELEASE);
      if (error) throw error;
    });
    after(async () => {
      await database?.close();
      await storage?.drop();
    });

    test('a credential is live only when its merchant’s newest API key by then was live; its calls follow its grant', async () => {
      const { db } = database;
      let serial = 0;
      const merchant = async (id: string, keys: [mode: 'test' | 'live', at: number][]) => {
        await sql`INSERT INTO merchants (id, name, wallet_address, created_at) VALUES (${id}, ${id}, NULL, 1)`.execute(db);
        await sql`INSERT INTO users (id, merchant_id, email, password_hash, created_at, updated_at) VALUES (${`usr_${id}`}, ${id}, ${`${id}@shop.example`}, 'x', 1, 1)`.execute(
          db,
        );
        for (const [mode, at] of keys)
          await sql`INSERT INTO api_keys (id, merchant_id, mode, key_hash, last_four, created_at, revoked_at) VALUES (${`key_${++serial}`}, ${id}, ${mode}, ${`hash_${serial}`}, 'abcd', ${at}, NULL)`.execute(
            db,
          );
      };
      const client = (id: string, merchantId: string, at: number) =>
        sql`INSERT INTO oauth_clients (id, merchant_id, secret_hash, created_at, revoked_at) VALUES (${id}, ${merchantId}, ${`secret_${id}`}, ${at}, NULL)`.execute(
          db,
        );
      const grant = async (id: string, merchantId: string, at: number) => {
        await sql`INSERT INTO oauth_grants (id, merchant_id, user_id, client_id, client_name, scopes, created_at, updated_at, last_used_at, revoked_at, revoked_reason)
          VALUES (${id}, ${merchantId}, ${`usr_${merchantId}`}, ${`https://agent.example/${id}.json`}, 'Agent', 'orders:read', ${at}, ${at}, NULL, NULL, NULL)`.execute(
          db,
        );
        await sql`INSERT INTO mcp_tool_calls (id, created_at, grant_id, client_id, merchant_id, tool, outcome, reason, arguments_sha256)
          VALUES (${`call_${id}`}, ${at + 1}, ${id}, ${`https://agent.example/${id}.json`}, ${merchantId}, 'list_orders', 'ok', NULL, 'digest')`.execute(db);
      };

      // Never live: a sandbox merchant.
      await merchant('mer_sandbox', [['test', 100]]);
      await client('cli_sandbox', 'mer_sandbox', 200);
      await grant('grant_sandbox', 'mer_sandbox', 200);
      // Went live at 300: what it made before is of the sandbox, what it made after is live.
      await merchant('mer_live', [
        ['test', 100],
        ['live', 300],
      ]);
      await client('cli_before_live', 'mer_live', 150);
      await client('cli_after_live', 'mer_live', 400);
      await grant('grant_before_live', 'mer_live', 299);
      await grant('grant_after_live', 'mer_live', 300);
      // No key at all: nothing says it was live.
      await merchant('mer_keyless', []);
      await client('cli_keyless', 'mer_keyless', 500);
      // Back to the sandbox after a live key (a rehearsal): what came after the test key is of the sandbox.
      await merchant('mer_back', [
        ['live', 100],
        ['test', 200],
      ]);
      await client('cli_back', 'mer_back', 300);

      assert.ok((await migrateToLatest(db)).includes('0026_credential_modes'));

      const clients = Object.fromEntries((await db.selectFrom('oauth_clients').select(['id', 'mode']).execute()).map((row) => [row.id, row.mode]));
      assert.deepEqual(clients, {
        cli_sandbox: 'sandbox',
        cli_before_live: 'sandbox',
        cli_after_live: 'live',
        cli_keyless: 'sandbox',
        cli_back: 'sandbox',
      });
      const grants = Object.fromEntries((await db.selectFrom('oauth_grants').select(['id', 'mode']).execute()).map((row) => [row.id, row.mode]));
      assert.deepEqual(grants, { grant_sandbox: 'sandbox', grant_before_live: 'sandbox', grant_after_live: 'live' });
      const calls = Object.fromEntries((await db.selectFrom('mcp_tool_calls').select(['grant_id', 'mode']).execute()).map((row) => [row.grant_id, row.mode]));
      assert.deepEqual(calls, grants, 'each audited call has its grant’s mode');

      // One active grant per merchant, client and mode: the merchant may now give the same agent live data too.
      await db
        .insertInto('oauth_grants')
        .values({
          id: 'grant_live_too',
          merchant_id: 'mer_sandbox',
          user_id: 'usr_mer_sandbox',
          client_id: 'https://agent.example/grant_sandbox.json',
          client_name: 'Agent',
          scopes: 'orders:read',
          mode: 'live',
          created_at: 600,
          updated_at: 600,
          last_used_at: null,
          revoked_at: null,
          revoked_reason: null,
        })
        .execute();
      await assert.rejects(
        db
          .insertInto('oauth_grants')
          .values({
            id: 'grant_second_test',
            merchant_id: 'mer_sandbox',
            user_id: 'usr_mer_sandbox',
            client_id: 'https://agent.example/grant_sandbox.json',
            client_name: 'Agent',
            scopes: 'orders:read',
            mode: 'sandbox',
            created_at: 600,
            updated_at: 600,
            last_used_at: null,
            revoked_at: null,
            revoked_reason: null,
          })
          .execute(),
        /unique|UNIQUE/,
      );
    });
  });
}
