// Webhook secrets are sealed bound to their merchant and column (AES-GCM associated data): a sealed
// value copied into another merchant's row, or into the other column, does not open there, so a
// receiver is never sent another merchant's secret. Migration 0018 re-seals the secrets stored before.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { openSecret, sealSecret, signingKeyBinding, webhookSecretBinding } from '../common/secrets.ts';
import { migrateToLatest, migrationsWith } from '../db/migrate.ts';
import { signingKeys } from '../oauth/signing-keys.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { getWebhook, setWebhook } from './endpoints.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`webhook secrets bound to their row on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    const endpointFor = async () => {
      const { merchantId } = await service.merchant();
      const secrets = await setWebhook(service.context.db, service.config.secretKey, merchantId, { url: 'https://hooks.shop.example/till' }, 'sandbox');
      return { merchantId, ...secrets };
    };
    const row = (merchantId: string) =>
      service.context.db.selectFrom('webhook_endpoints').selectAll().where('merchant_id', '=', merchantId).executeTakeFirstOrThrow();

    test("a sealed secret copied into another merchant's row, or the other column, does not open", async () => {
      const victim = await endpointFor();
      const intruder = await endpointFor();
      const { db } = service.context;
      const intrudersRow = await row(intruder.merchantId);
      await db
        .updateTable('webhook_endpoints')
        .set({ signing_secret_sealed: intrudersRow.signing_secret_sealed })
        .where('merchant_id', '=', victim.merchantId)
        .execute();
      await assert.rejects(getWebhook(db, service.config.secretKey, victim.merchantId, 'sandbox'), /Unsupported state or unable to authenticate data/);
      const victimsRow = await row(victim.merchantId);
      await db
        .updateTable('webhook_endpoints')
        .set({ signing_secret_sealed: victimsRow.webhook_key_sealed })
        .where('merchant_id', '=', victim.merchantId)
        .execute();
      await assert.rejects(getWebhook(db, service.config.secretKey, victim.merchantId, 'sandbox'), /Unsupported state or unable to authenticate data/);
      // The untouched endpoint reads as it was written.
      assert.equal((await getWebhook(db, service.config.secretKey, intruder.merchantId, 'sandbox'))?.signingSecret, intruder.signingSecret);
    });

    test('migrations 0018 and 0020 re-seal secrets and signing keys stored unbound, and refuses to run on them without the secret key', async () => {
      const merchant = await endpointFor();
      const { db } = service.context;
      const key = service.config.secretKey;
      // As the service stored them before 0018.
      await db
        .updateTable('webhook_endpoints')
        .set({ webhook_key_sealed: sealSecret(merchant.webhookKey, key), signing_secret_sealed: sealSecret(merchant.signingSecret, key) })
        .where('merchant_id', '=', merchant.merchantId)
        .execute();
      // A token-signing key as stored before 0020, too.
      const { signing } = await signingKeys(db, key, Date.now(), true);
      const [signingRow] = await db.selectFrom('signing_keys').selectAll().where('kid', '=', signing.kid).execute();
      const privateJwk = openSecret(signingRow!.private_jwk_sealed, key, signingKeyBinding(signing.kid));
      await db
        .updateTable('signing_keys')
        .set({ private_jwk_sealed: sealSecret(privateJwk, key) })
        .where('kid', '=', signing.kid)
        .execute();
      // Back to the schema before 0018: every later schema change undone, newest first (0018 and 0020
      // only re-seal stored data), and all of them forgotten.
      const migrations = migrationsWith(key);
      const since0018 = Object.keys(migrations).filter((name) => name >= '0018');
      for (const name of since0018.toReversed())
        if (name !== '0018_bound_webhook_secrets' && name !== '0020_bound_signing_keys') await migrations[name]!.down!(db);
      await sql`DELETE FROM kysely_migration WHERE name IN (${sql.join(since0018)})`.execute(db);
      await assert.rejects(migrateToLatest(db), /needs TILL_SECRET_KEY/);
      assert.deepEqual(await migrateToLatest(db, { secretKey: key }), since0018);
      const resealedKey = await db.selectFrom('signing_keys').select('private_jwk_sealed').where('kid', '=', signing.kid).executeTakeFirstOrThrow();
      assert.equal(openSecret(resealedKey.private_jwk_sealed, key, signingKeyBinding(signing.kid)), privateJwk, 'the signing key is bound to its row');
      const stored = await row(merchant.merchantId);
      assert.match(stored.signing_secret_sealed, /^k1b\./);
      assert.equal(
        openSecret(stored.signing_secret_sealed, key, webhookSecretBinding(merchant.merchantId, 'signing_secret_sealed', 'sandbox')),
        merchant.signingSecret,
      );
      const read = await getWebhook(db, key, merchant.merchantId, 'sandbox');
      assert.deepEqual([read?.webhookKey, read?.signingSecret], [merchant.webhookKey, merchant.signingSecret]);
    });
  });
}
