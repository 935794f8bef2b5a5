import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { apiHeaders } from '../testing/shop.ts';
import { errorBody } from './errors.ts';
import { nulCharacterField, validate } from './validation.ts';

const Body = z.strictObject({ amount: z.number(), nested: z.strictObject({ url: z.string() }).optional() });

function refusal(input: unknown): { field: string | undefined; message: string; code: string } {
  try {
    validate(Body, input);
  } catch (error) {
    assert.ok(error instanceof TillError);
    const body = errorBody(error) as { error: { field?: string; message: string; code: string } };
    return { field: body.error.field, message: body.error.message, code: body.error.code };
  }
  throw new Error('expected a refusal');
}

test('a missing field is "required"; a field of the wrong type says which type it must be', () => {
  assert.deepEqual(refusal({}), { field: 'amount', message: 'amount is required', code: 'invalid_field' });
  assert.deepEqual(refusal({ amount: '1' }), { field: 'amount', message: 'amount must be a number', code: 'invalid_field' });
  assert.deepEqual(refusal({ amount: 1, nested: { url: 5 } }), { field: 'nested.url', message: 'nested.url must be a string', code: 'invalid_field' });
  assert.deepEqual(refusal({ amount: 1, extra: true }), { field: 'extra', message: 'Unknown field "extra" is not accepted', code: 'unknown_field' });
  assert.deepEqual(refusal('text'), { field: 'body', message: 'body must be a JSON object', code: 'invalid_field' });
});

test('a NUL character anywhere in the input is found and named: parameter, query key or value, body path, body key', () => {
  assert.equal(nulCharacterField({ params: { sessionId: 'ps_\u0000' } }), 'sessionId');
  assert.equal(nulCharacterField({ query: { amount: ['1', '\u0000'] } }), 'amount.1');
  assert.equal(nulCharacterField({ body: { orderId: 'a\u0000b' } }), 'orderId');
  assert.equal(nulCharacterField({ body: { params: { arguments: { concept: '\u0000' } } } }), 'params.arguments.concept');
  assert.equal(nulCharacterField({ body: { 'a\u0000': 1 } }), 'a\\u0000');
  assert.equal(nulCharacterField({ body: '\u0000' }), 'body');
  assert.equal(nulCharacterField({ params: { id: 'x' }, query: { a: 'b' }, body: { amount: 1, list: ['ok', null, 2] } }), undefined);
  // Deeper than any recursion could go.
  let deep: unknown = 'end\u0000';
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.equal(nulCharacterField({ body: deep })?.split('.').length, 200_000);
});

for (const { engine, skip } of engines) {
  describeOnEngine(`a NUL character in a request on ${engine}`, skip, () => {
    let service: TestService;
    let apiKey: string;
    before(async () => {
      // The x402 routes exist with a facilitator configured; nothing here reaches it.
      service = await startTestService(engine, {
        TILL_SANDBOX: 'true',
        TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
        TILL_USDC_ADDRESS: '0xae47EB9b9c9E6903b1e91C471308F98b5d2C3049',
      });
      ({ apiKey } = await service.merchant());
    });
    after(() => service?.stop());

    test('is a 400 naming the field, never a database error', async () => {
      const cases = [
        { method: 'GET', url: '/api/checkout/v2/payment_session/ps_%00', field: 'sessionId' },
        { method: 'GET', url: '/x402/session/ps_%00', field: 'sessionId' },
        { method: 'GET', url: '/checkout/pay?uid=%00', field: 'uid' },
        { method: 'POST', url: '/api/checkout/v2/payment_session', body: { amount: 1, currency: 'USD', orderId: 'o\u0000' }, field: 'orderId' },
        { method: 'PUT', url: '/api/checkout/v2/payment_session', body: { sessionId: 'ps_\u0000' }, field: 'sessionId' },
      ] as const;
      for (const c of cases) {
        const answer = await service.app.inject({ method: c.method, url: c.url, headers: apiHeaders(apiKey), ...('body' in c ? { payload: c.body } : {}) });
        assert.equal(answer.statusCode, 400, `${c.method} ${c.url}: ${answer.body}`);
        assert.equal(answer.json().error.field, c.field);
      }
    });
  });
}
