import type { ExactDecimal } from './decimal.ts';
import { formatMinor, parseExactDecimal } from './decimal.ts';

export const USDC_DECIMALS = 6;

/** Largest value a signed 64-bit column holds; no quote may exceed it. */
export const MAX_USDC_BASE_UNITS = 2n ** 63n - 1n;

/** Rates must stay within this many powers of ten of 1, so that no conversion builds a huge number. */
const RATE_EXPONENT_LIMIT = 40;

/** A rate (USDC per major unit of a currency) as an exact positive decimal, or undefined if it is not one. */
export function parseRate(rate: string): ExactDecimal | undefined {
  const decimal = parseExactDecimal(rate);
  if (!decimal || decimal.negative || decimal.coefficient === 0n) return undefined;
  if (Math.abs(decimal.exponent) > RATE_EXPONENT_LIMIT || decimal.coefficient.toString().length > RATE_EXPONENT_LIMIT) return undefined;
  return decimal;
}

/** An amount worth more USDC than a quote may ask for (MAX_USDC_BASE_UNITS). */
export class AmountTooLargeToQuoteError extends RangeError {}

/**
 * Converts fiat minor units into USDC base units at `rate` (a decimal string: USDC per one major
 * unit of the currency; "1" for USD), exactly, rounded up to the next base unit so that the
 * merchant never receives less than asked. Throws a RangeError on an invalid rate or a result
 * above MAX_USDC_BASE_UNITS.
 */
export function fiatMinorToUsdcBaseUnits(minor: bigint, exponent: number, rate: string): bigint {
  if (minor < 0n) throw new RangeError('a fiat amount cannot be negative');
  const parsedRate = parseRate(rate);
  if (!parsedRate) throw new RangeError(`invalid rate "${rate}"`);
  // minor × rate × 10^USDC_DECIMALS / 10^exponent, as one power of ten.
  const shift = USDC_DECIMALS - exponent + parsedRate.exponent;
  const product = minor * parsedRate.coefficient;
  const baseUnits = shift >= 0 ? product * 10n ** BigInt(shift) : ceilDivide(product, 10n ** BigInt(-shift));
  if (baseUnits > MAX_USDC_BASE_UNITS) throw new AmountTooLargeToQuoteError(`${baseUnits} USDC base units is too large to quote`);
  return baseUnits;
}

export function ceilDivide(numerator: bigint, denominator: bigint): bigint {
  return (numerator + denominator - 1n) / denominator;
}

/** USDC base units as a decimal with at least two decimals: 10000n → "0.01", 1n → "0.000001", 10000000n → "10.00". */
export function formatUsdc(baseUnits: bigint): string {
  return formatMinor(baseUnits, USDC_DECIMALS).replace(/(\.\d\d\d*?)0+$/, '$1');
}
