// What a domain refusal is checked against in tests: a TillError with its code and field.
import assert from 'node:assert/strict';
import { TillError } from '../common/errors.ts';

/** For assert.throws / assert.rejects: a TillError with this code and field, and a message matching `message` if given. */
export const refusedWith = (code: string, field: string, message?: RegExp) => (error: unknown) => {
  assert.ok(error instanceof TillError, String(error));
  assert.equal(error.code, code);
  assert.equal(error.field, field);
  if (message) assert.match(error.message, message);
  return true;
};
