import { formatMinor } from './decimal.ts';
import { normalizeCurrency } from './iso4217.ts';
import { ceilDivide, parseRate } from './usdc.ts';

/** How many USDC one major unit of `currency` is worth, as an exact decimal string. */
export type Rate = {
  currency: string;
  rate: string;
  /** Where the rate comes from, stored with the quote and shown on receipts. */
  source: string;
  /** Epoch milliseconds at which the rate was observed. */
  fetchedAt: number;
};

export interface RatesProvider {
  /** Whether the currency can be quoted at all; checked when a session is created. */
  supports(currency: string): Promise<boolean>;
  /** A usable rate, or RateUnavailableError / UnsupportedCurrencyError; never a made-up one. */
  getRate(currency: string): Promise<Rate>;
}

/** The rate is stale, missing from the latest rates, or the rates could not be fetched: retry later (503). */
export class RateUnavailableError extends Error {
  override readonly name = 'RateUnavailableError';
  readonly currency: string;
  constructor(currency: string, reason: string, options?: ErrorOptions) {
    super(`no usable ${currency} rate: ${reason}`, options);
    this.currency = currency;
  }
}

/** No provider quotes this currency. */
export class UnsupportedCurrencyError extends Error {
  override readonly name = 'UnsupportedCurrencyError';
  readonly currency: string;
  constructor(currency: string) {
    super(`the currency ${currency} cannot be quoted in USDC`);
    this.currency = currency;
  }
}

/** USDC is redeemable one to one for US dollars; USD is never looked up. */
const USD_PARITY = { rate: '1', source: 'USD parity' };

/**
 * Sandbox rates: FAKE, fixed, plausible values so that quotes in other currencies can be tried
 * without any network. USDC per one major unit of the currency.
 */
export const SANDBOX_RATES: Readonly<Record<string, string>> = {
  USD: '1',
  EUR: '1.08',
  GBP: '1.27',
  CHF: '1.13',
  CAD: '0.73',
  AUD: '0.66',
  NZD: '0.60',
  JPY: '0.0067',
  KRW: '0.00072',
  CNY: '0.14',
  INR: '0.012',
  MXN: '0.058',
  BRL: '0.18',
  SEK: '0.095',
  NOK: '0.093',
  DKK: '0.145',
  SGD: '0.74',
  HKD: '0.128',
  KWD: '3.25',
  BHD: '2.65',
};

export class StaticRatesProvider implements RatesProvider {
  readonly #rates: ReadonlyMap<string, string>;
  readonly #source: string;
  readonly #now: () => number;

  constructor(options: { rates?: Readonly<Record<string, string>>; source?: string; now?: () => number } = {}) {
    const rates = new Map<string, string>();
    for (const [code, rate] of Object.entries(options.rates ?? SANDBOX_RATES)) {
      const currency = normalizeCurrency(code);
      if (!currency || !parseRate(rate)) throw new Error(`invalid static rate ${code}=${rate}`);
      rates.set(currency, rate);
    }
    this.#rates = rates;
    this.#source = options.source ?? 'sandbox static table (fake rates)';
    this.#now = options.now ?? Date.now;
  }

  async supports(currency: string): Promise<boolean> {
    const code = normalizeCurrency(currency);
    return code === 'USD' || (code !== undefined && this.#rates.has(code));
  }

  async getRate(currency: string): Promise<Rate> {
    const code = normalizeCurrency(currency);
    if (code === 'USD') return { currency: code, ...USD_PARITY, fetchedAt: this.#now() };
    const rate = code === undefined ? undefined : this.#rates.get(code);
    if (code === undefined || rate === undefined) throw new UnsupportedCurrencyError(currency);
    return { currency: code, rate, source: this.#source, fetchedAt: this.#now() };
  }
}

export type HttpRatesProviderOptions = {
  /** Address of the rates document (see RatesDocument). */
  url: string;
  /** A document whose timestamp is older than this is stale: its rates are not used. */
  maxAgeMs: number;
  /** The document is fetched again once the cached copy is this old (default 60 s, at most maxAgeMs / 2). */
  refreshMs?: number;
  /** Per-request timeout (default 5 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
};

/**
 * The document HttpRatesProvider reads — the shape of Open Exchange Rates' `latest.json`:
 *
 *   { "base": "USD", "timestamp": 1767225600, "rates": { "EUR": 0.92, "JPY": "150.5", … } }
 *
 * `timestamp` is when the rates were observed, in epoch seconds; each rate is how many units of
 * the currency one US dollar buys, as a JSON number or a decimal string (read from its exact
 * text either way). Other fields are ignored, and so are entries that are not a positive decimal
 * or not an ISO 4217 code. The quote rate is the inverse (USDC per unit), computed exactly to
 * 18 decimals and rounded up, so a quote is never below the amount asked.
 */
type RatesDocument = { observedAt: number; perUsd: ReadonlyMap<string, string> };

const INVERSE_RATE_DECIMALS = 18;
const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** Rates for production from an HTTP JSON document, cached, refused once stale. */
export class HttpRatesProvider implements RatesProvider {
  readonly #url: string;
  readonly #source: string;
  readonly #maxAgeMs: number;
  readonly #refreshMs: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  #document: RatesDocument | undefined;
  #lastAttemptAt = -Infinity;
  #inFlight: Promise<RatesDocument> | undefined;

  constructor(options: HttpRatesProviderOptions) {
    const url = new URL(options.url);
    this.#url = url.href;
    // The query string may carry an API key; it never goes into stored quotes.
    this.#source = url.origin + url.pathname;
    this.#maxAgeMs = options.maxAgeMs;
    this.#refreshMs = options.refreshMs ?? Math.min(60_000, options.maxAgeMs / 2);
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
  }

  async supports(currency: string): Promise<boolean> {
    const code = normalizeCurrency(currency);
    if (code === undefined) return false;
    if (code === 'USD') return true;
    return (await this.#currentDocument(code)).perUsd.has(code);
  }

  async getRate(currency: string): Promise<Rate> {
    const code = normalizeCurrency(currency);
    if (code === undefined) throw new UnsupportedCurrencyError(currency);
    if (code === 'USD') return { currency: code, ...USD_PARITY, fetchedAt: this.#now() };
    const document = await this.#currentDocument(code);
    const ageMs = this.#now() - document.observedAt;
    if (ageMs > this.#maxAgeMs)
      throw new RateUnavailableError(code, `the rates are ${Math.round(ageMs / 1000)} s old (limit ${Math.round(this.#maxAgeMs / 1000)} s)`);
    const perUsd = document.perUsd.get(code);
    if (perUsd === undefined) throw new RateUnavailableError(code, `${this.#source} has no rate for it`);
    return { currency: code, rate: invertRate(perUsd), source: this.#source, fetchedAt: document.observedAt };
  }

  /** The cached document, fetched again when due; a failed fetch falls back to the cached copy. */
  async #currentDocument(code: string): Promise<RatesDocument> {
    const cached = this.#document;
    const now = this.#now();
    const due = !cached || now - this.#lastAttemptAt >= this.#refreshMs || now - cached.observedAt > this.#maxAgeMs;
    if (!due) return cached;
    try {
      return await this.#refresh();
    } catch (error) {
      if (cached) return cached;
      throw new RateUnavailableError(code, `cannot read ${this.#source}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** One fetch at a time, shared by every caller waiting on it. */
  #refresh(): Promise<RatesDocument> {
    this.#inFlight ??= this.#fetchDocument().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #fetchDocument(): Promise<RatesDocument> {
    this.#lastAttemptAt = this.#now();
    const response = await this.#fetch(this.#url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.#timeoutMs) });
    if (!response.ok || Number(response.headers.get('content-length') ?? 0) > MAX_DOCUMENT_BYTES) {
      await response.body?.cancel();
      throw new Error(response.ok ? 'the document is too large' : `HTTP ${response.status}`);
    }
    const text = await response.text();
    if (text.length > MAX_DOCUMENT_BYTES) throw new Error('the document is too large');
    const document = parseRatesDocument(text);
    this.#document = document;
    return document;
  }
}

/** Reads the document with every number kept as the exact text it was written in. */
function parseRatesDocument(text: string): RatesDocument {
  const json: unknown = JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? context.source : value,
  );
  if (typeof json !== 'object' || json === null) throw new Error('the document is not a JSON object');
  const { base, timestamp, rates } = json as Record<string, unknown>;
  if (base !== 'USD') throw new Error(`the document's base is ${JSON.stringify(base)}, not "USD"`);
  if (typeof timestamp !== 'string' || !/^[1-9][0-9]{0,11}$/.test(timestamp)) throw new Error('the document has no timestamp in epoch seconds');
  if (typeof rates !== 'object' || rates === null || Array.isArray(rates)) throw new Error('the document has no rates object');
  const perUsd = new Map<string, string>();
  for (const [code, value] of Object.entries(rates)) {
    const currency = normalizeCurrency(code);
    if (currency && typeof value === 'string' && parseRate(value)) perUsd.set(currency, value);
  }
  return { observedAt: Number(timestamp) * 1000, perUsd };
}

/** 1 / (units per USD) = USDC per unit, to 18 decimals, rounded up. */
export function invertRate(perUsd: string): string {
  const rate = parseRate(perUsd);
  if (!rate) throw new RangeError(`invalid rate "${perUsd}"`);
  // 10^18 / (coefficient × 10^exponent), with every power of ten kept non-negative.
  const shift = INVERSE_RATE_DECIMALS - rate.exponent;
  const scaled = ceilDivide(10n ** BigInt(Math.max(shift, 0)), rate.coefficient * 10n ** BigInt(Math.max(-shift, 0)));
  return formatMinor(scaled, INVERSE_RATE_DECIMALS).replace(/\.?0+$/, '');
}

/**
 * The rates a service quotes with: the HTTP document when TILL_RATES_URL is set; otherwise the fake
 * sandbox table in the sandbox, and USD alone (USDC parity) with real money, never a fake rate.
 */
export function createRatesProvider(config: { ratesUrl: string | undefined; ratesMaxAgeSeconds: number; mode: 'sandbox' | 'live' }): RatesProvider {
  if (config.ratesUrl) return new HttpRatesProvider({ url: config.ratesUrl, maxAgeMs: config.ratesMaxAgeSeconds * 1000 });
  if (config.mode === 'sandbox') return new StaticRatesProvider();
  return new StaticRatesProvider({ rates: { USD: '1' }, source: 'USD parity' });
}
