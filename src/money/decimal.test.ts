import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatMinor, MAX_AMOUNT_MAJOR_UNITS, MAX_SIGNIFICANT_DIGITS, minorToJsonNumber, parseDecimalAmount, parseExactDecimal } from './decimal.ts';

function minor(text: string, exponent: number, options?: { allowZero?: boolean }): bigint {
  const parsed = parseDecimalAmount(text, exponent, options);
  assert.ok(parsed.ok, `${text} should parse, got ${parsed.ok ? '' : parsed.reason}`);
  return parsed.minor;
}

function refusal(text: string, exponent: number, options?: { allowZero?: boolean }): string {
  const parsed = parseDecimalAmount(text, exponent, options);
  assert.ok(!parsed.ok, `${text} should be refused`);
  return parsed.reason;
}

test('two-decimal currencies: trailing zeros are fine, a third significant decimal is not', () => {
  assert.equal(minor('10', 2), 1000n);
  assert.equal(minor('10.5', 2), 1050n);
  assert.equal(minor('10.50', 2), 1050n);
  assert.equal(minor('1.500', 2), 150n);
  assert.equal(minor('0.01', 2), 1n);
  assert.equal(refusal('1.505', 2), 'has more decimals than the currency allows');
  assert.equal(refusal('0.001', 2), 'has more decimals than the currency allows');
});

test('exponent notation is normalised before counting decimals', () => {
  assert.equal(minor('1e2', 2), 10000n);
  assert.equal(minor('1E+3', 2), 100000n);
  assert.equal(minor('1e-2', 2), 1n);
  assert.equal(minor('1050E-2', 2), 1050n);
  assert.equal(minor('0.105e2', 2), 1050n);
  assert.equal(refusal('1e-3', 2), 'has more decimals than the currency allows');
  assert.equal(minor(`1${'0'.repeat(5000)}e-5000`, 2), 100n);
});

test('zero-decimal currencies take whole numbers only', () => {
  assert.equal(minor('100', 0), 100n);
  assert.equal(minor('1.0', 0), 1n);
  assert.equal(minor('150e-1', 0), 15n);
  assert.equal(refusal('1.5', 0), 'has more decimals than the currency allows');
  assert.equal(refusal('15e-1', 0), 'has more decimals than the currency allows');
});

test('three- and four-decimal currencies', () => {
  assert.equal(minor('0.001', 3), 1n);
  assert.equal(minor('1e-3', 3), 1n);
  assert.equal(minor('12.345', 3), 12345n);
  assert.equal(refusal('0.0001', 3), 'has more decimals than the currency allows');
  assert.equal(minor('0.0001', 4), 1n);
  assert.equal(minor('2.5', 4), 25000n);
  assert.equal(refusal('0.00001', 4), 'has more decimals than the currency allows');
});

test('decimal fractions stay exact: 0.1 + 0.2 is 0.3', () => {
  assert.equal(minor('0.1', 2) + minor('0.2', 2), minor('0.3', 2));
  assert.equal(minor('0.3', 2), 30n);
  assert.equal(minor('1.15', 2), 115n);
  assert.equal(minor('4.35', 2), 435n);
});

test('zero is refused unless allowed; negatives always', () => {
  for (const text of ['0', '0.00', '-0', '0e5', '0e999999999999']) {
    assert.equal(refusal(text, 2), 'must be greater than zero');
    assert.equal(minor(text, 2, { allowZero: true }), 0n);
  }
  assert.equal(refusal('-1', 2), 'must be greater than zero');
  assert.equal(refusal('-0.01', 2, { allowZero: true }), 'must not be negative');
});

test('anything that is not a JSON number is refused', () => {
  for (const text of ['', ' 1', '1 ', '+1', '01', '1.', '.5', 'NaN', 'Infinity', '-Infinity', '1e', '0x10', '1_000', '1,5', '١', '10 USD']) {
    assert.equal(refusal(text, 2), 'must be a finite decimal number', JSON.stringify(text));
  }
});

test(`amounts are capped at ${MAX_AMOUNT_MAJOR_UNITS} major units`, () => {
  assert.equal(minor('1000000000000', 2), 10n ** 14n);
  assert.equal(minor('1e12', 4), 10n ** 16n);
  assert.equal(minor('999999999999.999', 4), 10n ** 16n - 10n);
  assert.equal(refusal('1000000000000.01', 2), 'must be at most 1000000000000');
  assert.equal(refusal('1e13', 0), 'must be at most 1000000000000');
  assert.equal(refusal('9'.repeat(5000), 0), 'must be at most 1000000000000');
  assert.equal(refusal('1e400', 2), 'must be at most 1000000000000');
  assert.equal(refusal('1e999999999999999999999', 2), 'must be at most 1000000000000');
  assert.equal(refusal('1e-999999999999999999999', 2), 'has more decimals than the currency allows');
});

test(`amounts have at most ${MAX_SIGNIFICANT_DIGITS} significant digits, which a JSON number holds exactly`, () => {
  const tooPrecise = 'has more than 15 significant digits, more than a JSON number holds exactly';
  // Four-decimal currencies (CLF, UYW) are the only ones with room for more under the cap.
  assert.equal(refusal('999999999999.9999', 4), tooPrecise);
  assert.equal(refusal('900719925474.0993', 4), tooPrecise);
  assert.equal(refusal('100000000000.0001', 4), tooPrecise);
  assert.equal(refusal('12345678901234.56e-2', 4), tooPrecise);
  assert.equal(minor('99999999999.9999', 4), 10n ** 15n - 1n);
  assert.equal(minor('123456789012.345', 4), 1234567890123450n);
  assert.equal(minor('1000000000000.0000', 4), 10n ** 16n, 'trailing zeros are not significant');
  assert.equal(minor('999999999999.999', 3), 10n ** 15n - 1n, 'three decimals always fit under the cap');
  // The cap and the currency's decimals are checked first, as before.
  assert.equal(refusal('1000000000000.00001', 4), 'has more decimals than the currency allows');
  assert.equal(refusal('1000000000000.0001', 4), 'must be at most 1000000000000');
});

test('every amount accepted prints back exactly as a JSON number', () => {
  // A deterministic walk over coefficients of 1 to 15 digits, at every exponent and magnitude up to the cap.
  let seed = 42n;
  const next = () => (seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n);
  let accepted = 0;
  let refused = 0;
  for (let exponent = 0; exponent <= 4; exponent++) {
    for (let digits = 1; digits <= 17; digits++) {
      for (let i = 0; i < 2000; i++) {
        const text = formatMinor(10n ** BigInt(digits - 1) + (next() % (9n * 10n ** BigInt(digits - 1))), exponent);
        const parsed = parseDecimalAmount(text, exponent);
        if (!parsed.ok) {
          refused++;
          continue;
        }
        // The JSON number shown for it reads back as exactly this amount (minorToJsonNumber also throws otherwise).
        assert.deepEqual(parseExactDecimal(JSON.stringify(minorToJsonNumber(parsed.minor, exponent))), parseExactDecimal(text), text);
        accepted++;
      }
    }
  }
  assert.ok(refused > 0 && accepted > 100_000, `${accepted} accepted, ${refused} refused`);
});

test('parseExactDecimal moves trailing zeros into the exponent', () => {
  assert.deepEqual(parseExactDecimal('10.50'), { negative: false, coefficient: 105n, exponent: -1 });
  assert.deepEqual(parseExactDecimal('-1200e-1'), { negative: true, coefficient: 12n, exponent: 1 });
  assert.deepEqual(parseExactDecimal('0.000'), { negative: false, coefficient: 0n, exponent: 0 });
  assert.equal(parseExactDecimal('1.2.3'), undefined);
});

test('formatMinor writes exactly the currency decimals', () => {
  assert.equal(formatMinor(1050n, 2), '10.50');
  assert.equal(formatMinor(5n, 2), '0.05');
  assert.equal(formatMinor(0n, 2), '0.00');
  assert.equal(formatMinor(7n, 0), '7');
  assert.equal(formatMinor(1n, 3), '0.001');
  assert.equal(formatMinor(123456n, 4), '12.3456');
  assert.equal(formatMinor(-1050n, 2), '-10.50');
});

test('minorToJsonNumber prints back as exactly the amount, or throws', () => {
  assert.equal(JSON.stringify({ amount: minorToJsonNumber(1050n, 2) }), '{"amount":10.5}');
  assert.equal(JSON.stringify(minorToJsonNumber(1n, 2)), '0.01');
  assert.equal(JSON.stringify(minorToJsonNumber(12345n, 3)), '12.345');
  assert.equal(JSON.stringify(minorToJsonNumber(10n ** 12n, 0)), '1000000000000');
  assert.equal(JSON.stringify(minorToJsonNumber(10n ** 16n - 1n, 4)), '999999999999.9999');
  assert.throws(() => minorToJsonNumber(2n ** 53n + 1n, 0), RangeError);
});
