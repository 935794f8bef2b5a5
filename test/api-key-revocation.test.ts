// Two instances of the service on one database (two services on one SQLite file, or on one
// PostgreSQL database as behind a load balancer): each remembers the API keys it has authenticated
// (src/merchants/api-keys.ts, through src/db/change-watch.ts), and a key revoked through one is
// refused by the other on the very next request, asked at once, with nothing waited for.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { CompiledQuery } from 'kysely';
import { pino } from 'pino';
import { createService, type Service } from '../src/main.ts';
import { revokeApiKey } from '../src/merchants/api-keys.ts';
import { setMerchantWallet } from '../src/merchants/merchants.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../src/testing/harness.ts';
import { createSession, readSession, sessionRequest } from '../src/testing/shop.ts';

const TRIALS = 20;

for (const { engine, skip } of engines) {
  describeOnEngine(`a revoked API key on two instances (${engine})`, skip, () => {
    let first: TestService & { baseUrl: string };
    let second: Service;
    let secondUrl: string;
    /** The statements the second instance sent that read a key by its hash. */
    let keyReads = 0;
    const countKeyReads = (query: CompiledQuery) => {
      if (/from "api_keys"/i.test(query.sql) && /"key_hash" = /.test(query.sql)) keyReads++;
    };

    before(async () => {
      first = await startListeningTestService(engine);
      second = await createService(first.config, { workers: false, log: pino({ level: 'silent' }), onQuery: countKeyReads });
      secondUrl = await second.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(async () => {
      await second?.close();
      await first?.stop();
    });

    test('the other instance refuses it on its next request, every time', async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const merchant = await first.merchant();
        const sessionId = await createSession(first, merchant.apiKey, { amount: 1, currency: 'USD' });
        // The second instance reads the key (its first use writes the key's last use, which forgets
        // it), reads it again, and then answers from what it remembers: asked until a request reads
        // no key (any commit of a watched table, this test's or another's, makes it read once more).
        let remembered = false;
        for (let i = 0; i < 10 && !remembered; i++) {
          const readsBefore = keyReads;
          assert.equal((await readSession(secondUrl, merchant.apiKey, sessionId)).status, 200);
          remembered = keyReads === readsBefore;
        }
        assert.ok(remembered, `trial ${trial}: the second instance answers from the key it remembers`);

        assert.equal(await revokeApiKey(first.context.db, merchant.keyId), true);
        const refused = await readSession(secondUrl, merchant.apiKey, sessionId);
        assert.equal(refused.status, 401, `trial ${trial}: the revoked key was refused at once by the other instance`);
        assert.equal((await refused.json()).error.code, 'unauthorized');
        assert.equal((await readSession(first.baseUrl, merchant.apiKey, sessionId)).status, 401);
      }
    });

    test("a merchant's payout wallet set through one instance is what the other's next session is told", async () => {
      const merchant = await first.merchant();
      const create = async () => {
        const response = await sessionRequest(secondUrl, merchant.apiKey, 'POST', { amount: 1, currency: 'USD' });
        assert.equal(response.status, 201);
        return (await response.json()) as { warnings?: { code: string }[] };
      };
      for (let i = 0; i < 2; i++) assert.equal((await create()).warnings?.[0]?.code, 'no_payout_wallet');
      assert.equal(await setMerchantWallet(first.context.db, merchant.merchantId, 'sandbox', `0x${'ef'.repeat(20)}`), true);
      assert.equal((await create()).warnings, undefined);
    });
  });
}
