import { formatMinor, minorToJsonNumber, parseDecimalAmount } from './decimal.ts';

/**
 * ISO 4217 List One (published 2025-05-12): every active currency code with its minor-unit
 * exponent. Codes whose minor unit is "N.A." (precious metals, SDR, bond-market units, XTS,
 * XXX …) are left out: they cannot be priced in.
 */
const CODES_BY_EXPONENT: Record<number, string> = {
  0: 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF',
  2:
    'AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD ' +
    'CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL ' +
    'GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR ' +
    'LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD ' +
    'PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC ' +
    'SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG',
  3: 'BHD IQD JOD KWD LYD OMR TND',
  4: 'CLF UYW',
};

const EXPONENTS = new Map<string, number>(
  Object.entries(CODES_BY_EXPONENT).flatMap(([exponent, codes]) => codes.split(' ').map((code) => [code, Number(exponent)] as const)),
);

/** The upper-case ISO 4217 code, or undefined when `code` is not an active currency. */
export function normalizeCurrency(code: string): string | undefined {
  const upper = code.toUpperCase();
  return EXPONENTS.has(upper) ? upper : undefined;
}

/** Number of decimals of the currency's minor unit (USD 2, JPY 0, KWD 3, CLF 4), case-insensitive. */
export function currencyExponent(code: string): number | undefined {
  return EXPONENTS.get(code.toUpperCase());
}

/** An amount for people to read, with the currency's own decimals: 12.50 USD, 500 JPY, 1.234 KWD. */
export function formatMoney(minor: bigint, currency: string): string {
  return `${formatMinor(minor, currencyExponent(currency) ?? 2)} ${currency}`;
}

/**
 * An amount as the API shows it (a JSON number, e.g. 12.5) written like formatMoney: "12.50 USD".
 * A number that is not an amount of the currency is written as it is.
 */
export function formatMoneyNumber(amount: number, currency: string): string {
  const parsed = parseDecimalAmount(String(amount), currencyExponent(currency) ?? 2, { allowZero: true });
  return parsed.ok ? formatMoney(parsed.minor, currency) : `${amount} ${currency}`;
}

/** An amount in a currency's minor units as the JSON number the API shows, e.g. 1250n USD → 12.5. */
export function decimalNumber(minor: bigint, currency: string): number {
  return minorToJsonNumber(minor, currencyExponent(currency) ?? 2);
}
