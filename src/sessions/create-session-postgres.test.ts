import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { createApiKey, listApiKeys } from '../merchants/api-keys.ts';
import { setMerchantWallet } from '../merchants/merchants.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { sessionRequest } from '../testing/shop.ts';

const postgres = engines.find((entry) => entry.engine === 'postgres')!;

describeOnEngine('E1 on PostgreSQL: one statement per request', postgres.skip, () => {
  let service: TestService;
  let clock = 1_000_000;
  let statements: string[] = [];
  before(async () => {
    service = await startTestService('postgres', {}, { now: () => clock, onQuery: (query) => statements.push(query.sql) });
  });
  after(() => service?.stop());
  beforeEach(() => {
    clock += 120_000;
  });

  /** E1 as the merchant's server calls it, and the statements the service sent for it. */
  const post = async (apiKey: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
    statements = [];
    const response = await sessionRequest(service, apiKey, 'POST', body, headers);
    return { status: response.statusCode, json: response.json(), body: response.body, statements };
  };

  test('a session is created, its key authenticated and its use recorded in one statement', async () => {
    const merchant = await service.merchant({ walletAddress: `0x${'ab'.repeat(20)}` });
    const created = await post(merchant.apiKey, { amount: 12.5, currency: 'USD', orderId: 'one-trip-1' });
    assert.equal(created.status, 201);
    assert.equal(created.statements.length, 1);
    assert.deepEqual(created.json, { sessionId: created.json.sessionId, redirectUrl: `http://till.test/checkout/pay?uid=${created.json.sessionId}` });
    const row = await service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', created.json.sessionId).executeTakeFirstOrThrow();
    assert.equal(row.merchant_id, merchant.merchantId);
    assert.equal(row.amount_minor, 1250n);
    assert.equal(row.order_id, 'one-trip-1');
    assert.equal(row.created_via, 'api');
    assert.equal(row.payments_in_progress, 0);
    assert.equal((await listApiKeys(service.context.db, merchant.merchantId)).keys[0]?.lastUsedAt, new Date(clock).toISOString());
  });

  test('last_used_at is written at most once a minute', async () => {
    const merchant = await service.merchant();
    const lastUsed = async () => (await listApiKeys(service.context.db, merchant.merchantId)).keys[0]?.lastUsedAt;
    assert.equal((await post(merchant.apiKey, { amount: 1, currency: 'USD' })).status, 201);
    const first = clock;
    clock += 30_000;
    assert.equal((await post(merchant.apiKey, { amount: 1, currency: 'USD' })).status, 201);
    assert.equal(await lastUsed(), new Date(first).toISOString());
    clock += 30_000;
    assert.equal((await post(merchant.apiKey, { amount: 1, currency: 'USD' })).status, 201);
    assert.equal(await lastUsed(), new Date(clock).toISOString());
  });

  test('without a wallet the body warns, and an Idempotency-Key replays it byte for byte, each in one statement', async () => {
    const merchant = await service.merchant();
    const body = { amount: 3, currency: 'USD', concept: 'Idempotent' };
    const first = await post(merchant.apiKey, body, { 'idempotency-key': 'one-trip' });
    assert.equal(first.status, 201);
    assert.equal(first.statements.length, 1);
    assert.equal(first.json.warnings[0].code, 'no_payout_wallet');
    assert.match(first.json.warnings[0].message, new RegExp(merchant.merchantId));
    // The wallet set now does not change the answer replayed.
    await setMerchantWallet(service.context.db, merchant.merchantId, 'sandbox', `0x${'cd'.repeat(20)}`);
    const again = await post(merchant.apiKey, body, { 'idempotency-key': 'one-trip' });
    assert.equal(again.status, 201);
    assert.equal(again.body, first.body);
    assert.equal(again.statements.length, 1);
    const other = await post(merchant.apiKey, { ...body, amount: 4 }, { 'idempotency-key': 'one-trip' });
    assert.equal(other.status, 422);
    assert.equal(other.json.error.code, 'idempotency_key_reused');
    const sessions = await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchant.merchantId).execute();
    assert.deepEqual(
      sessions.map((row) => row.id),
      [first.json.sessionId],
    );
  });

  test('an expired Idempotency-Key is taken over by the next request', async () => {
    const merchant = await service.merchant();
    const first = await post(merchant.apiKey, { amount: 5, currency: 'USD' }, { 'idempotency-key': 'day-old' });
    clock += 24 * 60 * 60 * 1000;
    const next = await post(merchant.apiKey, { amount: 6, currency: 'USD' }, { 'idempotency-key': 'day-old' });
    assert.equal(next.status, 201);
    assert.notEqual(next.json.sessionId, first.json.sessionId);
  });

  test('unknown, revoked and other-mode keys are 401 in one statement; a bad body without a valid key is still 401', async () => {
    const merchant = await service.merchant();
    const unknown = await post(`sk_test_${'A'.repeat(43)}`, { amount: 1, currency: 'USD' });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.statements.length, 1);
    const live = await createApiKey(service.context.db, merchant.merchantId, 'live');
    assert.equal((await post(live.apiKey, { amount: 1, currency: 'USD' })).status, 401);
    assert.equal((await post(`sk_test_${'A'.repeat(43)}`, { amount: -1, currency: 'USD' })).status, 401);
    assert.equal((await post(`sk_test_${'A'.repeat(43)}`, { amount: 1, currency: 'XXX' })).status, 401);
    const invalid = await post(merchant.apiKey, { amount: -1, currency: 'USD' });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.error.field, 'amount');
    assert.equal((await listApiKeys(service.context.db, merchant.merchantId)).keys.find((key) => key.keyId === live.keyId)?.lastUsedAt, null);
  });

  test('a taken orderId is 409 and the key use is still recorded', async () => {
    const merchant = await service.merchant();
    assert.equal((await post(merchant.apiKey, { amount: 1, currency: 'USD', orderId: 'taken' })).status, 201);
    clock += 120_000;
    const again = await post(merchant.apiKey, { amount: 1, currency: 'USD', orderId: 'taken' }, { 'idempotency-key': 'taken-1' });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, 'order_id_in_use');
    assert.equal(again.json.error.field, 'orderId');
    assert.equal((await listApiKeys(service.context.db, merchant.merchantId)).keys[0]?.lastUsedAt, new Date(clock).toISOString());
    // Nothing of the failed request was kept under its Idempotency-Key.
    const retry = await post(merchant.apiKey, { amount: 1, currency: 'USD', orderId: 'free' }, { 'idempotency-key': 'taken-1' });
    assert.equal(retry.status, 201);
  });
});
