import assert from 'node:assert/strict';
import { test } from 'node:test';
import { currencyExponent, formatMoney, formatMoneyNumber, normalizeCurrency } from './iso4217.ts';

test('exponents come from the ISO 4217 table, case-insensitively', () => {
  assert.equal(currencyExponent('USD'), 2);
  assert.equal(currencyExponent('eur'), 2);
  assert.equal(currencyExponent('JPY'), 0);
  assert.equal(currencyExponent('KRW'), 0);
  assert.equal(currencyExponent('KWD'), 3);
  assert.equal(currencyExponent('BHD'), 3);
  assert.equal(currencyExponent('TND'), 3);
  assert.equal(currencyExponent('CLF'), 4);
  assert.equal(currencyExponent('uyw'), 4);
  assert.equal(currencyExponent('XCG'), 2);
  assert.equal(currencyExponent('ZWG'), 2);
});

test('unknown, withdrawn and non-monetary codes have no exponent', () => {
  for (const code of ['', 'US', 'USDD', 'ABC', 'XAU', 'XDR', 'XTS', 'XXX', 'HRK', 'ZWL', 'constructor', '__proto__', ' USD']) {
    assert.equal(currencyExponent(code), undefined, code);
    assert.equal(normalizeCurrency(code), undefined, code);
  }
});

test('normalizeCurrency returns the upper-case code', () => {
  assert.equal(normalizeCurrency('usd'), 'USD');
  assert.equal(normalizeCurrency('Jpy'), 'JPY');
  assert.equal(normalizeCurrency('CLF'), 'CLF');
});

test('formatMoney writes every decimal of the currency', () => {
  assert.equal(formatMoney(1250n, 'USD'), '12.50 USD');
  assert.equal(formatMoney(500n, 'JPY'), '500 JPY');
  assert.equal(formatMoney(1234n, 'KWD'), '1.234 KWD');
  assert.equal(formatMoney(5n, 'EUR'), '0.05 EUR');
  assert.equal(formatMoney(10000n, 'CLF'), '1.0000 CLF');
});

test("formatMoneyNumber writes an API amount with the currency's decimals", () => {
  assert.equal(formatMoneyNumber(3.5, 'USD'), '3.50 USD');
  assert.equal(formatMoneyNumber(0, 'USD'), '0.00 USD');
  assert.equal(formatMoneyNumber(500, 'JPY'), '500 JPY');
  assert.equal(formatMoneyNumber(1.2, 'KWD'), '1.200 KWD');
});
