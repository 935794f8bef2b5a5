import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { refusedWith } from '../testing/refusals.ts';
import { authenticateApiKey, countActiveApiKeys, createApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
import { acceptedChains, checkAcceptedChains, createMerchant, findMerchant, listMerchants, paymentSettings, setAcceptedChains } from './merchants.ts';

const WALLET = `0x${'ab'.repeat(20)}`;

test('only supported chains and tokens can be accepted; each refusal names the field and the chain or token', () => {
  assert.deepEqual(checkAcceptedChains([{ chain: 'Base', tokens: ['usdc', 'USDC'] }]), [{ chain: 'base', tokens: ['USDC'] }]);
  assert.throws(
    () => checkAcceptedChains([{ chain: 'solana', tokens: ['USDC'] }]),
    refusedWith('unsupported_chain', 'acceptedChains[0].chain', /chain "solana" is not accepted; accepted: base/),
  );
  assert.throws(
    () => checkAcceptedChains([{ chain: 'base', tokens: ['USDC', 'EURC'] }]),
    refusedWith('unsupported_token', 'acceptedChains[0].tokens[1]', /token "EURC" is not accepted on base; accepted: USDC/),
  );
  assert.throws(() => checkAcceptedChains([{ chain: 'toString', tokens: ['USDC'] }]), refusedWith('unsupported_chain', 'acceptedChains[0].chain'));
  assert.throws(() => checkAcceptedChains([]), refusedWith('invalid_field', 'acceptedChains'));
  assert.throws(() => checkAcceptedChains([{ chain: 'base', tokens: [] }]), refusedWith('invalid_field', 'acceptedChains[0].tokens'));
  assert.throws(
    () =>
      checkAcceptedChains([
        { chain: 'base', tokens: ['USDC'] },
        { chain: 'BASE', tokens: ['USDC'] },
      ]),
    refusedWith('invalid_field', 'acceptedChains[1].chain'),
  );
});

for (const { engine, skip } of engines) {
  describeOnEngine(`merchant settings and API keys on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());
    const db = () => service.context.db;

    test('a new merchant, and one created before the column existed, accepts USDC on base', async () => {
      const merchant = await createMerchant(db(), { name: 'New' });
      assert.deepEqual(merchant.acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
      assert.deepEqual(acceptedChains((await findMerchant(db(), merchant.id))!), [{ chain: 'base', tokens: ['USDC'] }]);
      // A row written without the column (as every merchant before the migration) gets the default.
      await db().insertInto('merchants').values({ id: 'mer_legacy', name: 'Legacy', wallet_address: null, created_at: 1 }).execute();
      assert.deepEqual((await findMerchant(db(), 'mer_legacy'))!.acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
      const listed = (await listMerchants(db())).find((m) => m.id === 'mer_legacy');
      assert.deepEqual(listed?.acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
    });

    test('the setter stores what is supported and refuses the rest, changing nothing', async () => {
      const merchant = await createMerchant(db(), { name: 'Setter' });
      assert.equal(await setAcceptedChains(db(), merchant.id, [{ chain: 'BASE', tokens: ['usdc'] }]), true);
      assert.deepEqual((await findMerchant(db(), merchant.id))!.acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
      await assert.rejects(
        setAcceptedChains(db(), merchant.id, [{ chain: 'ethereum', tokens: ['USDC'] }]),
        refusedWith('unsupported_chain', 'acceptedChains[0].chain'),
      );
      await assert.rejects(
        setAcceptedChains(db(), merchant.id, [{ chain: 'base', tokens: ['USDT'] }]),
        refusedWith('unsupported_token', 'acceptedChains[0].tokens[0]'),
      );
      assert.deepEqual((await findMerchant(db(), merchant.id))!.acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
      assert.equal(await setAcceptedChains(db(), 'mer_missing', [{ chain: 'base', tokens: ['USDC'] }]), false);
    });

    test("payment settings show chains, tokens and whether the mode's payout address is set, never the address", async () => {
      const withWallet = await createMerchant(db(), { name: 'Coffee Shop', wallets: { sandbox: WALLET } });
      const settings = await paymentSettings(db(), withWallet.id, 'sandbox', { baseUrl: 'http://till.test' });
      assert.deepEqual(settings, {
        merchantId: withWallet.id,
        businessName: 'Coffee Shop',
        payoutAddressConfigured: true,
        chains: [{ name: 'base', tokens: ['USDC'], payoutAddressConfigured: true }],
        apiBasePath: '/api/checkout/v2',
        apiBaseUrl: 'http://till.test/api/checkout/v2',
      });
      assert.doesNotMatch(JSON.stringify(settings), new RegExp(WALLET.slice(2), 'i'));
      // Its test wallet is no live wallet.
      assert.equal((await paymentSettings(db(), withWallet.id, 'live', { baseUrl: 'http://till.test' }))?.payoutAddressConfigured, false);
      const without = await createMerchant(db(), { name: 'No wallet' });
      const bare = await paymentSettings(db(), without.id, 'sandbox', { baseUrl: 'http://till.test' });
      assert.equal(bare?.payoutAddressConfigured, false);
      assert.deepEqual(bare?.chains, [{ name: 'base', tokens: ['USDC'], payoutAddressConfigured: false }]);
      assert.equal(await paymentSettings(db(), 'mer_missing', 'sandbox', { baseUrl: 'http://till.test' }), undefined);
    });

    test('API keys are listed masked, active ones only, with a count; never in clear', async () => {
      const merchant = await createMerchant(db(), { name: 'Keys' });
      const other = await createMerchant(db(), { name: 'Other' });
      assert.deepEqual(await listApiKeys(db(), merchant.id), { keys: [], count: 0 });
      const first = await createApiKey(db(), merchant.id, 'test', 1_000);
      const second = await createApiKey(db(), merchant.id, 'live', 2_000);
      const revoked = await createApiKey(db(), merchant.id, 'test', 3_000);
      await createApiKey(db(), other.id, 'test');
      await revokeApiKey(db(), revoked.keyId);
      const listed = await listApiKeys(db(), merchant.id);
      assert.deepEqual(listed, {
        keys: [
          { keyId: first.keyId, masked: `…${first.apiKey.slice(-4)}`, mode: 'test', createdAt: new Date(1_000).toISOString(), lastUsedAt: null, scopes: null },
          {
            keyId: second.keyId,
            masked: `…${second.apiKey.slice(-4)}`,
            mode: 'live',
            createdAt: new Date(2_000).toISOString(),
            lastUsedAt: null,
            scopes: null,
          },
        ],
        count: 2,
      });
      const text = JSON.stringify(listed);
      for (const key of [first, second]) assert.ok(!text.includes(key.apiKey.slice(0, 20)));
      assert.equal(await countActiveApiKeys(db(), merchant.id), 2);
      assert.equal(await countActiveApiKeys(db(), other.id), 1);
      assert.equal(await countActiveApiKeys(db(), 'mer_missing'), 0);
    });

    test("a key's last use is written at most once a minute, and only its merchant revokes it", async () => {
      const merchant = await createMerchant(db(), { name: 'Used' });
      const key = await createApiKey(db(), merchant.id, 'test', 1_000);
      const lastUsed = async () => (await listApiKeys(db(), merchant.id)).keys[0]?.lastUsedAt;
      assert.equal(await lastUsed(), null);
      assert.ok(await authenticateApiKey(db(), key.apiKey, ['sandbox'], 100_000));
      assert.equal(await lastUsed(), new Date(100_000).toISOString());
      await authenticateApiKey(db(), key.apiKey, ['sandbox'], 159_999);
      assert.equal(await lastUsed(), new Date(100_000).toISOString(), 'not rewritten within the minute');
      await authenticateApiKey(db(), key.apiKey, ['sandbox'], 160_000);
      assert.equal(await lastUsed(), new Date(160_000).toISOString());
      assert.equal(await revokeApiKey(db(), key.keyId, 2_000, 'mer_other'), false);
      assert.equal(await revokeApiKey(db(), key.keyId, 2_000, merchant.id), true);
    });
  });
}
