import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { readSession, sessionRequest } from '../testing/shop.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`payment sessions E1/E2 on ${engine}`, skip, () => {
    let service: TestService;
    let key: string;
    let otherKey: string;

    before(async () => {
      service = await startTestService(engine);
      key = (await service.merchant({ walletAddress: `0x${'ab'.repeat(20)}` })).apiKey;
      otherKey = (await service.merchant({ name: 'Other', walletAddress: `0x${'cd'.repeat(20)}` })).apiKey;
    });
    after(() => service?.stop());

    const send = (method: 'POST' | 'PUT', body: unknown, apiKey: string | undefined = key, headers: Record<string, string> = {}) =>
      sessionRequest(service, apiKey, method, body, headers);
    const create = (body: unknown, apiKey?: string) => send('POST', body, apiKey);
    const update = (body: unknown, apiKey?: string) => send('PUT', body, apiKey);
    const read = (sessionId: string, apiKey = key) => readSession(service, apiKey, sessionId);

    describe('happy path', () => {
      test('create returns 201 with the session id and a redirect URL carrying uid', async () => {
        const response = await create({
          amount: 25.5,
          currency: 'usd',
          orderId: 'order-1',
          successUrl: 'https://shop.example/ok',
          cancelUrl: 'https://shop.example/cancel',
        });
        assert.equal(response.statusCode, 201);
        const body = response.json();
        assert.match(body.sessionId, /^ps_[A-Za-z0-9_-]{22}$/);
        assert.equal(body.redirectUrl, `http://till.test/checkout/pay?uid=${body.sessionId}`);
        assert.deepEqual(Object.keys(body).sort(), ['redirectUrl', 'sessionId']);
        const details = (await read(body.sessionId)).json();
        assert.equal(details.amount, 25.5);
        assert.equal(details.currency, 'USD');
        assert.equal(details.orderType, 'TRANSIENT');
        assert.equal(details.status, 'OPEN');
        assert.equal(details.editable, false);
        assert.equal(details.orderId, 'order-1');
        const ttl = Date.parse(details.expiresAt) - Date.parse(details.createdAt);
        assert.equal(ttl, 86_400_000);
      });

      test('amounts are exact in minor units: 0.1 + 0.2 style values and exponent notation', async () => {
        for (const [text, expected] of [
          ['0.30', 0.3],
          ['1e2', 100],
          ['19.99', 19.99],
          ['1234567.89', 1234567.89],
        ] as const) {
          const response = await create(`{"amount": ${text}, "currency": "EUR"}`);
          assert.equal(response.statusCode, 201, text);
          assert.equal((await read(response.json().sessionId)).json().amount, expected);
        }
        const yen = await create('{"amount": 500, "currency": "JPY"}');
        assert.equal(yen.statusCode, 201);
        const dinar = await create('{"amount": 1.234, "currency": "KWD"}');
        assert.equal(dinar.statusCode, 201);
      });

      test('STATIC sessions never expire; editable sessions take a floor', async () => {
        const response = await create({ amount: 10, currency: 'USD', orderType: 'STATIC', editable: true, minAmount: 2 });
        assert.equal(response.statusCode, 201);
        const details = (await read(response.json().sessionId)).json();
        assert.equal(details.orderType, 'STATIC');
        assert.equal(details.expiresAt, null);
        assert.equal(details.minAmount, 2);
        assert.equal(details.editable, true);
      });

      test('nulls mean "not given"', async () => {
        const response = await create({
          amount: 1,
          currency: 'USD',
          orderType: null,
          minAmount: null,
          editable: null,
          orderId: null,
          successUrl: null,
          cancelUrl: null,
        });
        assert.equal(response.statusCode, 201);
      });

      test('update changes only the fields sent and returns 200 with the 2.2 body', async () => {
        const { sessionId } = (await create({ amount: 5, currency: 'USD', orderType: 'STATIC', concept: 'Donation', orderId: 'don-1' })).json();
        const response = await update({ sessionId, amount: 7.25, editable: true, minAmount: 1, failUrl: 'https://shop.example/fail' });
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), { sessionId, redirectUrl: `http://till.test/checkout/pay?uid=${sessionId}` });
        const details = (await read(sessionId)).json();
        assert.equal(details.amount, 7.25);
        assert.equal(details.minAmount, 1);
        assert.equal(details.concept, 'Donation');
        assert.equal(details.orderId, 'don-1');
        assert.equal(details.failUrl, 'https://shop.example/fail');
        const cleared = await update({ sessionId, minAmount: null, concept: null });
        assert.equal(cleared.statusCode, 200);
        const after = (await read(sessionId)).json();
        assert.equal(after.minAmount, null);
        assert.equal(after.concept, null);
        assert.equal(after.editable, true);
      });

      test('update may change the currency when amounts are restated', async () => {
        const { sessionId } = (await create({ amount: 5, currency: 'USD' })).json();
        assert.equal((await update({ sessionId, currency: 'JPY', amount: 700 })).statusCode, 200);
        const details = (await read(sessionId)).json();
        assert.equal(details.currency, 'JPY');
        assert.equal(details.amount, 700);
      });

      test('a merchant without a payout wallet is warned on E1 and E2 with the command that fixes it', async () => {
        const { apiKey, merchantId } = await service.merchant({ name: 'No wallet yet' });
        const created = await create({ amount: 5, currency: 'USD', orderType: 'STATIC' }, apiKey);
        assert.equal(created.statusCode, 201);
        const { sessionId, warnings } = created.json();
        assert.deepEqual(warnings, [
          {
            code: 'no_payout_wallet',
            message: `merchant ${merchantId} has no payout wallet, so its sessions cannot be paid (x402 answers 422 no_pay_to) until one is set in the dashboard under Settings → Payout wallet (/dashboard/settings); an operator can also run: till merchant set-wallet ${merchantId} 0xYourAddress`,
          },
        ]);
        const updated = await update({ sessionId, concept: 'Donation' }, apiKey);
        assert.equal(updated.statusCode, 200);
        assert.equal(updated.json().warnings[0].code, 'no_payout_wallet');
        await service.context.db
          .updateTable('merchants')
          // The key is a test key: the test payout wallet is the one its sessions pay.
          .set({ test_wallet_address: `0x${'12'.repeat(20)}` })
          .where('id', '=', merchantId)
          .execute();
        assert.equal((await update({ sessionId, concept: 'Gift' }, apiKey)).json().warnings, undefined);
        assert.deepEqual(Object.keys((await create({ amount: 5, currency: 'USD' }, apiKey)).json()).sort(), ['redirectUrl', 'sessionId']);
      });

      test('Idempotency-Key replays the first response byte for byte', async () => {
        const body = { amount: 3, currency: 'USD' };
        const first = await send('POST', body, key, { 'idempotency-key': 'retry-1' });
        const second = await send('POST', body, key, { 'idempotency-key': 'retry-1' });
        assert.equal(first.statusCode, 201);
        assert.equal(second.statusCode, 201);
        assert.equal(second.body, first.body);
        const other = await send('POST', { amount: 4, currency: 'USD' }, key, { 'idempotency-key': 'retry-1' });
        assert.equal(other.statusCode, 422);
        assert.equal(other.json().error.code, 'idempotency_key_reused');
        // Scoped per merchant: another merchant's identical key is its own.
        const third = await send('POST', body, otherKey, { 'idempotency-key': 'retry-1' });
        assert.equal(third.statusCode, 201);
        assert.notEqual(third.json().sessionId, first.json().sessionId);
      });

      test('a validation failure is not stored under the Idempotency-Key', async () => {
        const bad = await send('POST', { amount: -1, currency: 'USD' }, key, { 'idempotency-key': 'retry-2' });
        assert.equal(bad.statusCode, 400);
        const good = await send('POST', { amount: 1, currency: 'USD' }, key, { 'idempotency-key': 'retry-2' });
        assert.equal(good.statusCode, 201);
      });
    });

    describe('errors: every bad input is a 4xx naming the field', () => {
      const base = { amount: 10, currency: 'USD' };
      const long = (n: number) => 'x'.repeat(n);
      const url = (n: number) => `https://shop.example/${'a'.repeat(n - 'https://shop.example/'.length)}`;
      const cases: [string, string, number, string][] = [
        ['amount missing', JSON.stringify({ currency: 'USD' }), 400, 'amount'],
        ['amount zero', JSON.stringify({ ...base, amount: 0 }), 400, 'amount'],
        ['amount negative', JSON.stringify({ ...base, amount: -5 }), 400, 'amount'],
        ['amount a string', JSON.stringify({ ...base, amount: '10' }), 400, 'amount'],
        ['amount null', JSON.stringify({ ...base, amount: null }), 400, 'amount'],
        ['amount too many decimals', '{"amount": 10.001, "currency": "USD"}', 400, 'amount'],
        ['amount decimals on JPY', '{"amount": 10.5, "currency": "JPY"}', 400, 'amount'],
        ['amount absurdly large', '{"amount": 1e300, "currency": "USD"}', 400, 'amount'],
        ['amount overflowing JSON', '{"amount": 1e400, "currency": "USD"}', 400, 'amount'],
        ['currency missing', JSON.stringify({ amount: 1 }), 400, 'currency'],
        ['currency unknown', JSON.stringify({ ...base, currency: 'XYZ' }), 400, 'currency'],
        ['currency no rate source quotes (PLN in the sandbox table)', JSON.stringify({ ...base, currency: 'PLN' }), 400, 'currency'],
        ['currency wrong length', JSON.stringify({ ...base, currency: 'US' }), 400, 'currency'],
        ['currency a number', JSON.stringify({ ...base, currency: 840 }), 400, 'currency'],
        ['orderType unknown', JSON.stringify({ ...base, orderType: 'ONCE' }), 400, 'orderType'],
        ['orderType lower case', JSON.stringify({ ...base, orderType: 'static' }), 400, 'orderType'],
        ['minAmount on a fixed amount', JSON.stringify({ ...base, minAmount: 1 }), 400, 'minAmount'],
        ['minAmount with editable false', JSON.stringify({ ...base, editable: false, minAmount: 1 }), 400, 'minAmount'],
        ['minAmount above amount', JSON.stringify({ ...base, editable: true, minAmount: 11 }), 400, 'minAmount'],
        ['minAmount zero', JSON.stringify({ ...base, editable: true, minAmount: 0 }), 400, 'minAmount'],
        ['minAmount too many decimals', '{"amount": 10, "currency": "USD", "editable": true, "minAmount": 1.001}', 400, 'minAmount'],
        ['editable a string', JSON.stringify({ ...base, editable: 'yes' }), 400, 'editable'],
        ['orderId empty', JSON.stringify({ ...base, orderId: '' }), 400, 'orderId'],
        ['orderId 256 characters', JSON.stringify({ ...base, orderId: long(256) }), 400, 'orderId'],
        ['orderId a number', JSON.stringify({ ...base, orderId: 42 }), 400, 'orderId'],
        ['concept 501 characters', JSON.stringify({ ...base, concept: long(501) }), 400, 'concept'],
        ['successUrl relative', JSON.stringify({ ...base, successUrl: '/ok' }), 400, 'successUrl'],
        ['successUrl javascript:', JSON.stringify({ ...base, successUrl: 'javascript:alert(1)' }), 400, 'successUrl'],
        ['successUrl 2049 characters', JSON.stringify({ ...base, successUrl: url(2049) }), 400, 'successUrl'],
        ['cancelUrl ftp', JSON.stringify({ ...base, cancelUrl: 'ftp://shop.example/x' }), 400, 'cancelUrl'],
        ['failUrl not a URL', JSON.stringify({ ...base, failUrl: 'not a url' }), 400, 'failUrl'],
        ['unknown field', JSON.stringify({ ...base, price: 10 }), 400, 'price'],
        ['payTo cannot be set over the API', JSON.stringify({ ...base, payTo: `0x${'1'.repeat(40)}` }), 400, 'payTo'],
      ];
      for (const [name, payload, status, field] of cases) {
        test(`${name} → ${status} naming ${field}`, async () => {
          const response = await create(payload);
          assert.equal(response.statusCode, status, response.body);
          const { error } = response.json();
          assert.equal(error.field, field);
          assert.match(error.message, new RegExp(field));
        });
      }

      test('length limits hold exactly at the limit', async () => {
        const response = await create({ ...base, orderId: long(255), concept: long(500), successUrl: url(2048), cancelUrl: url(2048), failUrl: url(2048) });
        assert.equal(response.statusCode, 201, response.body);
      });

      test('malformed JSON, wrong content type, empty and oversized bodies are 4xx', async () => {
        const malformed = await create('{"amount": 1,');
        assert.equal(malformed.statusCode, 400);
        assert.equal(malformed.json().error.code, 'invalid_json');
        const notObject = await create('[1,2]');
        assert.equal(notObject.statusCode, 400);
        const empty = await create('');
        assert.equal(empty.statusCode, 400);
        const text = await send('POST', 'amount=1', key, { 'content-type': 'text/plain' });
        assert.equal(text.statusCode, 415);
        const form = await send('POST', 'amount=1', key, { 'content-type': 'application/x-www-form-urlencoded' });
        assert.equal(form.statusCode, 415);
        const big = await create(JSON.stringify({ ...base, concept: long(17 * 1024) }));
        assert.equal(big.statusCode, 413);
        assert.equal(big.json().error.code, 'body_too_large');
      });

      test('JSON media types with parameters are accepted on E1 and E2; other media types and charsets get 415', async () => {
        for (const type of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'APPLICATION/JSON', 'application/vnd.api+json']) {
          const created = await send('POST', { amount: 2, currency: 'USD' }, key, { 'content-type': type });
          assert.equal(created.statusCode, 201, `${type}: ${created.body}`);
          const updated = await send('PUT', { sessionId: created.json().sessionId, concept: 'x' }, key, { 'content-type': type });
          assert.equal(updated.statusCode, 200, `${type}: ${updated.body}`);
        }
        for (const type of ['text/json', 'application/jsonp', 'application/json; charset=latin1', 'multipart/form-data; boundary=x']) {
          for (const method of ['POST', 'PUT'] as const) {
            const response = await send(method, { amount: 2, currency: 'USD' }, key, { 'content-type': type });
            assert.equal(response.statusCode, 415, `${method} ${type}`);
            assert.equal(response.json().error.code, 'unsupported_media_type');
          }
        }
      });

      test('orderId is unique per merchant (409), but two merchants may share one', async () => {
        assert.equal((await create({ ...base, orderId: 'dup' })).statusCode, 201);
        const again = await create({ ...base, orderId: 'dup' });
        assert.equal(again.statusCode, 409);
        assert.equal(again.json().error.field, 'orderId');
        assert.equal((await create({ ...base, orderId: 'dup' }, otherKey)).statusCode, 201);
      });

      test('bad Idempotency-Key is refused by name', async () => {
        const response = await send('POST', base, key, { 'idempotency-key': 'has space' });
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().error.field, 'Idempotency-Key');
      });

      test('update: sessionId required and non-empty, unknown fields, orderType not changeable, same field rules', async () => {
        const { sessionId } = (await create({ ...base, orderType: 'STATIC' })).json();
        const cases: [unknown, string][] = [
          [{ amount: 1 }, 'sessionId'],
          [{ sessionId: '' }, 'sessionId'],
          [{ sessionId, orderType: 'TRANSIENT' }, 'orderType'],
          [{ sessionId, bogus: 1 }, 'bogus'],
          [{ sessionId, amount: 0 }, 'amount'],
          [{ sessionId, minAmount: 1 }, 'minAmount'],
          [{ sessionId, currency: 'ABC' }, 'currency'],
          [{ sessionId, currency: 'PLN', amount: 5 }, 'currency'],
          [{ sessionId, currency: 'EUR' }, 'amount'],
          [{ sessionId, successUrl: 'nope' }, 'successUrl'],
          [{ sessionId, concept: long(501) }, 'concept'],
          [{ sessionId, orderId: long(256) }, 'orderId'],
        ];
        for (const [body, field] of cases) {
          const response = await update(body);
          assert.equal(response.statusCode, 400, JSON.stringify(body));
          assert.equal(response.json().error.field, field, JSON.stringify(body));
        }
      });

      test('update: unknown session is 404', async () => {
        const response = await update({ sessionId: 'ps_doesnotexist', amount: 1 });
        assert.equal(response.statusCode, 404);
      });

      test('update: an expired TRANSIENT session is 409', async () => {
        const { sessionId } = (await create(base)).json();
        await service.context.db
          .updateTable('payment_sessions')
          .set({ expires_at: Date.now() - 1 })
          .where('id', '=', sessionId)
          .execute();
        const response = await update({ sessionId, amount: 2 });
        assert.equal(response.statusCode, 409);
        assert.equal(response.json().error.code, 'session_expired');
      });

      test('update: a settled TRANSIENT session is 409', async () => {
        const { sessionId } = (await create(base)).json();
        await service.context.db.updateTable('payment_sessions').set({ status: 'SUCCESS' }).where('id', '=', sessionId).execute();
        const response = await update({ sessionId, amount: 2 });
        assert.equal(response.statusCode, 409);
        assert.equal(response.json().error.code, 'session_settled');
      });
    });

    describe('security', () => {
      test('missing, wrong, malformed and revoked keys get 401 in the common shape', async () => {
        const body = { amount: 1, currency: 'USD' };
        const missing = await create(body, '');
        assert.equal(missing.statusCode, 401);
        assert.equal(missing.json().error.code, 'unauthorized');
        const wrong = await create(body, `sk_test_${'A'.repeat(43)}`);
        assert.equal(wrong.statusCode, 401);
        const malformed = await create(body, 'not-a-key');
        assert.equal(malformed.statusCode, 401);
        const fresh = await service.merchant();
        assert.equal((await create(body, fresh.apiKey)).statusCode, 201);
        const { revokeApiKey } = await import('../merchants/api-keys.ts');
        assert.equal(await revokeApiKey(service.context.db, fresh.keyId), true);
        assert.equal((await create(body, fresh.apiKey)).statusCode, 401);
        assert.equal((await update({ sessionId: 'x' }, fresh.apiKey)).statusCode, 401);
      });

      test('a key revoked or a wallet set by another process is seen on the next request', async () => {
        const { openDatabase } = await import('../db/index.ts');
        const { revokeApiKey } = await import('../merchants/api-keys.ts');
        const { setMerchantWallet } = await import('../merchants/merchants.ts');
        const body = { amount: 1, currency: 'USD' };
        const merchant = await service.merchant();
        const other = openDatabase(service.config);
        try {
          // Used twice before each change: a key is read once, then known.
          for (let i = 0; i < 2; i++) {
            const before = await create(body, merchant.apiKey);
            assert.equal(before.statusCode, 201);
            assert.equal(before.json().warnings[0].code, 'no_payout_wallet');
          }
          assert.equal(await setMerchantWallet(other.db, merchant.merchantId, 'sandbox', `0x${'ef'.repeat(20)}`), true);
          for (let i = 0; i < 2; i++) {
            const after = await create(body, merchant.apiKey);
            assert.equal(after.statusCode, 201);
            assert.equal(after.json().warnings, undefined);
          }
          assert.equal(await revokeApiKey(other.db, merchant.keyId), true);
          assert.equal((await create(body, merchant.apiKey)).statusCode, 401);
        } finally {
          await other.close();
        }
      });

      test('a live key is refused in the sandbox', async () => {
        const { createApiKey } = await import('../merchants/api-keys.ts');
        const merchant = await service.merchant();
        const live = await createApiKey(service.context.db, merchant.merchantId, 'live');
        const response = await create({ amount: 1, currency: 'USD' }, live.apiKey);
        assert.equal(response.statusCode, 401);
      });

      test("another merchant's session is 404 on update and read, and stays unchanged", async () => {
        const { sessionId } = (await create({ amount: 1, currency: 'USD', orderType: 'STATIC' })).json();
        const response = await update({ sessionId, amount: 999 }, otherKey);
        assert.equal(response.statusCode, 404);
        assert.equal((await read(sessionId, otherKey)).statusCode, 404);
        assert.equal((await read(sessionId)).json().amount, 1);
      });

      test('the API key never appears in a response', async () => {
        const response = await create({ amount: 1, currency: 'USD' });
        assert.ok(!response.body.includes(key));
      });
    });
  });
}
