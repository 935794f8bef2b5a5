/**
 * Exact decimal arithmetic on the text of numbers: amounts are read from the digits the
 * client sent and kept as integer minor units (bigint); nothing passes through a float.
 */

/** value = ±coefficient × 10^exponent, with the coefficient's trailing zeros moved into the exponent. */
export type ExactDecimal = { negative: boolean; coefficient: bigint; exponent: number };

const JSON_NUMBER = /^(-)?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/** Beyond this an exponent only says "absurdly large" or "absurdly small"; clamping keeps the arithmetic bounded. */
const EXPONENT_CLAMP = 1_000_000_000;

/** Parses a number written in JSON number syntax ("10.50", "1e2", "-0.001"); undefined for anything else. */
export function parseExactDecimal(text: string): ExactDecimal | undefined {
  const match = JSON_NUMBER.exec(text);
  if (!match) return undefined;
  const [, sign, integerDigits = '', fractionDigits = '', exponentText = '0'] = match;
  const digits = integerDigits + fractionDigits;
  const significant = digits.replace(/0+$/, '');
  if (significant === '') return { negative: false, coefficient: 0n, exponent: 0 };
  const writtenExponent = Math.max(-EXPONENT_CLAMP, Math.min(EXPONENT_CLAMP, Number(exponentText)));
  return {
    negative: sign === '-',
    coefficient: BigInt(significant),
    exponent: writtenExponent - fractionDigits.length + (digits.length - significant.length),
  };
}

/**
 * The largest amount accepted, in major units of any currency: 10^12. It keeps minor units
 * inside a signed 64-bit column for every exponent up to 4, and a USD amount in 6-decimal USDC
 * base units too (10^18 < 2^63).
 */
export const MAX_AMOUNT_MAJOR_UNITS = 10n ** 12n;

/**
 * The most significant digits an amount may have: every decimal of up to 15 significant digits
 * comes back unchanged through an IEEE-754 double, which is what a JSON number is to most parsers
 * (ours included), so an accepted amount is always shown, sent and signed exactly as it was given.
 * Only four-decimal currencies (CLF, UYW) reach it below the cap: 99999999999.9999 is 15 digits,
 * 900719925474.0993 is 16 and would read back as 900719925474.0992.
 */
export const MAX_SIGNIFICANT_DIGITS = 15;

export type AmountParse = { ok: true; minor: bigint } | { ok: false; reason: string };

/**
 * Turns the source text of a JSON number into integer minor units of a currency with
 * `exponent` decimals. "1.50" and "1.500" are 150 minor units at exponent 2; "1.505" is refused,
 * and so is an amount above the cap or of more than MAX_SIGNIFICANT_DIGITS significant digits.
 * Zero is refused unless `allowZero`; negative values always are.
 */
export function parseDecimalAmount(text: string, exponent: number, options: { allowZero?: boolean } = {}): AmountParse {
  const decimal = parseExactDecimal(text);
  if (!decimal) return { ok: false, reason: 'must be a finite decimal number' };
  if (decimal.negative) return { ok: false, reason: options.allowZero ? 'must not be negative' : 'must be greater than zero' };
  if (decimal.coefficient === 0n) return options.allowZero ? { ok: true, minor: 0n } : { ok: false, reason: 'must be greater than zero' };
  if (decimal.exponent + exponent < 0) return { ok: false, reason: 'has more decimals than the currency allows' };
  const tooLarge = { ok: false, reason: `must be at most ${MAX_AMOUNT_MAJOR_UNITS}` } as const;
  // A coefficient of at least 1 times 10^13 is already too large; checked first so no huge power is built.
  if (decimal.exponent > 12) return tooLarge;
  const minor = decimal.coefficient * 10n ** BigInt(decimal.exponent + exponent);
  if (minor > MAX_AMOUNT_MAJOR_UNITS * 10n ** BigInt(exponent)) return tooLarge;
  if (decimal.coefficient.toString().length > MAX_SIGNIFICANT_DIGITS)
    return { ok: false, reason: `has more than ${MAX_SIGNIFICANT_DIGITS} significant digits, more than a JSON number holds exactly` };
  return { ok: true, minor };
}

/** Minor units as a decimal string with exactly `exponent` decimals: (1050n, 2) → "10.50". */
export function formatMinor(minor: bigint, exponent: number): string {
  const sign = minor < 0n ? '-' : '';
  const digits = (minor < 0n ? -minor : minor).toString().padStart(exponent + 1, '0');
  if (exponent === 0) return sign + digits;
  return `${sign}${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
}

/**
 * Minor units as a JavaScript number for a JSON body, e.g. (1050n, 2) → 10.5. Throws a
 * RangeError when the number would not print back as exactly this amount (more significant
 * digits than a double holds), so a response never shows a rounded amount.
 */
export function minorToJsonNumber(minor: bigint, exponent: number): number {
  const text = formatMinor(minor, exponent);
  const value = Number(text);
  const printed = parseExactDecimal(String(value));
  const exact = parseExactDecimal(text);
  if (!printed || !exact || printed.coefficient !== exact.coefficient || printed.exponent !== exact.exponent || printed.negative !== exact.negative) {
    throw new RangeError(`${text} cannot be written exactly as a JSON number`);
  }
  return value;
}
