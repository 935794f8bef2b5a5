import assert from 'node:assert/strict';
import { test } from 'node:test';
import { numberText, parseJsonKeepingNumberText } from './json.ts';

test("a number's text is kept when it is not the number's own spelling, and only then", () => {
  const spelled = parseJsonKeepingNumberText('{"amount": 10.50, "minAmount": 1e2, "concept": "12.5"}') as Record<string, unknown>;
  assert.equal(numberText(spelled, 'amount'), '10.50');
  assert.equal(numberText(spelled, 'minAmount'), '1e2');
  const plain = parseJsonKeepingNumberText('{"amount": 12.5, "minAmount": 100, "concept": "10.50 \\" 1e2"}') as Record<string, unknown>;
  // The number's own spelling: callers read the number, whose String() is the text sent.
  assert.equal(numberText(plain, 'amount'), undefined);
  assert.equal(String(plain.amount), '12.5');
  assert.deepEqual(plain, { amount: 12.5, minAmount: 100, concept: '10.50 " 1e2' });
  const negative = parseJsonKeepingNumberText('{"amount": -0, "nested": {"amount": 2.50}, "list": [1, 3.0]}') as Record<string, unknown>;
  assert.equal(numberText(negative, 'amount'), '-0');
  assert.equal(numberText(negative.nested, 'amount'), '2.50');
  assert.equal(numberText(negative.list, '1'), '3.0');
});
