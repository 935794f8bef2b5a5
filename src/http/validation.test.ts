import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import { errorBody } from './errors.ts';
import { validate } from './validation.ts';

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
