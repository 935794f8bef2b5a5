import { invalidField, TillError } from '../common/errors.ts';
import { parseDecimalAmount } from '../money/decimal.ts';
import { currencyExponent, normalizeCurrency } from '../money/iso4217.ts';
import { type RatesProvider, RateUnavailableError } from '../money/rates.ts';

export type SessionTerms = {
  amountMinor: bigint;
  currency: string;
  minAmountMinor: bigint | null;
  editable: boolean;
};

export function parseCurrency(value: string): { currency: string; exponent: number } {
  const currency = normalizeCurrency(value);
  const exponent = currency === undefined ? undefined : currencyExponent(currency);
  if (currency === undefined || exponent === undefined) throw invalidField('currency', 'must be an ISO 4217 currency code, e.g. USD');
  return { currency, exponent };
}

/** An ISO 4217 currency that the rates provider can quote in USDC; any other is refused at once. */
export async function parseQuotableCurrency(value: string, rates: RatesProvider): Promise<{ currency: string; exponent: number }> {
  const parsed = parseCurrency(value);
  let supported: boolean;
  try {
    supported = await rates.supports(parsed.currency);
  } catch (error) {
    if (error instanceof RateUnavailableError) throw new TillError('rate_unavailable', { currency: parsed.currency });
    throw error;
  }
  if (!supported) throw invalidField('currency', `${parsed.currency} cannot be quoted in USDC: no exchange rate source covers it`);
  return parsed;
}

/** A money value in minor units: the exact decimal text the client sent (never through a float), or a number written out. */
export function parseMoney(value: number | string, field: 'amount' | 'minAmount', exponent: number, currency: string): bigint {
  if (typeof value === 'number' && !Number.isFinite(value)) throw invalidField(field, 'must be a number');
  const parsed = parseDecimalAmount(String(value), exponent);
  if (!parsed.ok) throw invalidField(field, `${parsed.reason} (${currency} allows ${exponent} decimal${exponent === 1 ? '' : 's'})`);
  return parsed.minor;
}

/** The rules that tie amount, minAmount and editable together, checked on the merged result. */
export function checkTerms(terms: SessionTerms): void {
  if (terms.minAmountMinor !== null) {
    if (!terms.editable) throw invalidField('minAmount', 'is only allowed with editable: true; a fixed-amount session has no floor');
    if (terms.minAmountMinor > terms.amountMinor) throw invalidField('minAmount', 'must not be above amount');
  }
}
