import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fiatMinorToUsdcBaseUnits, formatUsdc, MAX_USDC_BASE_UNITS, parseRate } from './usdc.ts';

test('USD converts one to one into 6-decimal base units', () => {
  assert.equal(fiatMinorToUsdcBaseUnits(1000n, 2, '1'), 10_000_000n);
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 2, '1'), 10_000n);
  assert.equal(fiatMinorToUsdcBaseUnits(50n, 2, '1'), 500_000n);
  assert.equal(fiatMinorToUsdcBaseUnits(10n ** 14n, 2, '1'), 10n ** 18n);
  assert.equal(fiatMinorToUsdcBaseUnits(0n, 2, '1'), 0n);
});

test('exact conversions are not rounded', () => {
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 0, '0.0067'), 6700n);
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 0, '6.7e-3'), 6700n);
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 3, '3.25'), 3250n);
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 4, '40'), 4000n);
  assert.equal(fiatMinorToUsdcBaseUnits(1999n, 2, '1.08'), 21_589_200n);
});

test('a fractional base unit is rounded up, never down', () => {
  // 1 JPY at 1/150 USDC = 6666.67 base units
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 0, '0.006666666666666667'), 6667n);
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 0, '0.0000000001'), 1n);
  // 1.234 KWD × 3.252032520325203253 = 4.013008130081300814… USDC
  assert.equal(fiatMinorToUsdcBaseUnits(1234n, 3, '3.252032520325203253'), 4_013_009n);
  // 0.01 EUR × 1.086956521739130435 = 0.01086956… USDC
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 2, '1.086956521739130435'), 10_870n);
});

test('invalid rates and amounts are refused', () => {
  for (const rate of ['0', '-1', '', 'abc', '1e999', '1e-999', '1/3']) {
    assert.throws(() => fiatMinorToUsdcBaseUnits(100n, 2, rate), RangeError, rate);
    assert.equal(parseRate(rate), undefined, rate);
  }
  assert.throws(() => fiatMinorToUsdcBaseUnits(-1n, 2, '1'), RangeError);
});

test('a quote too large for a 64-bit column is refused', () => {
  assert.throws(() => fiatMinorToUsdcBaseUnits(10n ** 16n, 4, '40'), RangeError);
  assert.ok(fiatMinorToUsdcBaseUnits(10n ** 16n, 4, '0.9') <= MAX_USDC_BASE_UNITS);
});

test('formatUsdc keeps at least two decimals and every significant one', () => {
  assert.equal(formatUsdc(10_000n), '0.01');
  assert.equal(formatUsdc(10_000_000n), '10.00');
  assert.equal(formatUsdc(1n), '0.000001');
  assert.equal(formatUsdc(1_234_500n), '1.2345');
  assert.equal(formatUsdc(0n), '0.00');
  assert.equal(formatUsdc(4_012_909n), '4.012909');
});
