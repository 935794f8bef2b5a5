// The extensions E3 declares are the ones x402's reference package builds, and a payment identifier
// is refused exactly when the package's own check refuses it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { declarePaymentIdentifierExtension, isValidPaymentId, validatePaymentIdentifier } from '@x402/extensions/payment-identifier';
import fc from 'fast-check';
import { challengeExtensions, PAYMENT_IDENTIFIER, paymentIdentifierProblem } from './extensions.ts';

test('the payment-identifier declaration is the package’s, optional', () => {
  const declared = challengeExtensions(undefined);
  assert.deepEqual(Object.keys(declared), [PAYMENT_IDENTIFIER]);
  assert.deepEqual(declared[PAYMENT_IDENTIFIER], declarePaymentIdentifierExtension(false));
  assert.deepEqual(validatePaymentIdentifier(declared[PAYMENT_IDENTIFIER]), { valid: true });
});

test('an identifier is refused exactly when the package refuses it', () => {
  const alphabet = fc.constantFrom(...'abcXYZ019_-!@ .é/+'.split(''));
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: alphabet, minLength: 0, maxLength: 140 }), fc.string({ unit: 'grapheme', maxLength: 40 })), (id) => {
      assert.equal(paymentIdentifierProblem(id) === undefined, isValidPaymentId(id), JSON.stringify(id));
    }),
    { numRuns: 2000 },
  );
  for (const id of ['pay_7d5d747be160e280', 'a'.repeat(16), 'b'.repeat(128)]) assert.equal(paymentIdentifierProblem(id), undefined);
  for (const id of ['a'.repeat(15), 'b'.repeat(129), 'pay_7d5d747be160e28\n', 42, null]) assert.ok(paymentIdentifierProblem(id));
});
