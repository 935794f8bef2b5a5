import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import {
  createRatesProvider,
  HttpRatesProvider,
  invertRate,
  RateUnavailableError,
  SANDBOX_RATES,
  StaticRatesProvider,
  UnsupportedCurrencyError,
} from './rates.ts';
import { fiatMinorToUsdcBaseUnits } from './usdc.ts';

/** Observation time of fixtures/rates-usd.json. */
const OBSERVED_AT = 1767225600_000;
const MAX_AGE_MS = 10 * 60_000;
const REFRESH_MS = 60_000;

const fixtures: Record<string, string> = { '/rates.json': 'rates-usd.json', '/malformed.json': 'rates-malformed.json' };
let requests = 0;
let failing = false;

const server = createServer(async (request, response) => {
  requests++;
  const path = new URL(request.url ?? '/', 'http://fixture').pathname;
  const fixture = fixtures[path];
  if (failing || fixture === undefined) {
    response.writeHead(failing ? 500 : 404).end();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' }).end(await readFile(new URL(`fixtures/${fixture}`, import.meta.url)));
});
let origin = '';

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function provider(path = '/rates.json', clock = { now: OBSERVED_AT + 30_000 }) {
  requests = 0;
  failing = false;
  const rates = new HttpRatesProvider({ url: origin + path, maxAgeMs: MAX_AGE_MS, refreshMs: REFRESH_MS, now: () => clock.now });
  return { rates, clock };
}

test('fresh rates are inverted exactly into USDC per unit, rounded up', async () => {
  const { rates } = provider();
  assert.deepEqual(await rates.getRate('eur'), {
    currency: 'EUR',
    rate: '1.086956521739130435',
    source: `${origin}/rates.json`,
    fetchedAt: OBSERVED_AT,
  });
  assert.equal((await rates.getRate('GBP')).rate, '1.25');
  assert.equal((await rates.getRate('KWD')).rate, '3.252032520325203253');
  assert.equal((await rates.getRate('CLF')).rate, '40');
  const jpy = await rates.getRate('JPY');
  assert.equal(jpy.rate, '0.006666666666666667');
  assert.equal(fiatMinorToUsdcBaseUnits(1n, 0, jpy.rate), 6667n);
  assert.equal(requests, 1);
});

test('supports() answers from the document: listed, valid ISO entries only', async () => {
  const { rates } = provider();
  assert.equal(await rates.supports('EUR'), true);
  assert.equal(await rates.supports('jpy'), true);
  assert.equal(await rates.supports('USD'), true);
  assert.equal(await rates.supports('SEK'), false);
  assert.equal(await rates.supports('CHF'), false);
  assert.equal(await rates.supports('XYZ'), false);
});

test('a stale document gives RateUnavailableError, never its old rate', async () => {
  const { rates } = provider('/rates.json', { now: OBSERVED_AT + MAX_AGE_MS + 1 });
  await assert.rejects(rates.getRate('EUR'), (error) => error instanceof RateUnavailableError && error.currency === 'EUR' && /old/.test(error.message));
});

test('a currency missing from the document gives RateUnavailableError; a non-ISO code UnsupportedCurrencyError', async () => {
  const { rates } = provider();
  await assert.rejects(rates.getRate('SEK'), RateUnavailableError);
  await assert.rejects(rates.getRate('CHF'), RateUnavailableError);
  await assert.rejects(rates.getRate('XYZ'), UnsupportedCurrencyError);
});

test('a server that is down gives RateUnavailableError; USD is still quoted at par', async () => {
  const down = createServer();
  await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(down.address() as AddressInfo).port}/rates.json`;
  await new Promise<void>((resolve) => down.close(() => resolve()));
  const rates = new HttpRatesProvider({ url, maxAgeMs: MAX_AGE_MS, now: () => OBSERVED_AT });
  await assert.rejects(rates.getRate('EUR'), RateUnavailableError);
  await assert.rejects(rates.supports('EUR'), RateUnavailableError);
  assert.deepEqual(await rates.getRate('usd'), { currency: 'USD', rate: '1', source: 'USD parity', fetchedAt: OBSERVED_AT });
});

test('malformed JSON and HTTP errors give RateUnavailableError', async () => {
  await assert.rejects(provider('/malformed.json').rates.getRate('EUR'), (error) => error instanceof RateUnavailableError && /JSON/.test(error.message));
  await assert.rejects(provider('/missing.json').rates.getRate('EUR'), (error) => error instanceof RateUnavailableError && /HTTP 404/.test(error.message));
});

test('the document is cached, fetched once for concurrent callers, and refreshed when due', async () => {
  const { rates, clock } = provider();
  await Promise.all(['EUR', 'GBP', 'JPY', 'EUR', 'KWD'].map((code) => rates.getRate(code)));
  assert.equal(requests, 1);
  clock.now += REFRESH_MS - 1;
  await rates.getRate('EUR');
  assert.equal(requests, 1);
  clock.now += 1;
  await rates.getRate('EUR');
  assert.equal(requests, 2);
});

test('while the server fails, the cached document serves until it is stale', async () => {
  const { rates, clock } = provider();
  await rates.getRate('EUR');
  failing = true;
  clock.now += REFRESH_MS;
  assert.equal((await rates.getRate('EUR')).rate, '1.086956521739130435');
  assert.equal(requests, 2);
  clock.now = OBSERVED_AT + MAX_AGE_MS + 1;
  await assert.rejects(rates.getRate('EUR'), RateUnavailableError);
});

test('the source never carries the query string (it may hold an API key)', async () => {
  const { rates } = provider('/rates.json?app_id=secret');
  const rate = await rates.getRate('EUR');
  assert.equal(rate.source, `${origin}/rates.json`);
});

test('invertRate computes 1/x to 18 decimals, rounded up', () => {
  assert.equal(invertRate('0.92'), '1.086956521739130435');
  assert.equal(invertRate('4'), '0.25');
  assert.equal(invertRate('1'), '1');
  assert.equal(invertRate('0.5e-1'), '20');
  assert.equal(invertRate('3'), '0.333333333333333334');
  assert.equal(invertRate('1e21'), '0.000000000000000001');
});

test('the static sandbox table quotes its currencies and refuses the rest', async () => {
  const rates = new StaticRatesProvider({ now: () => OBSERVED_AT });
  assert.deepEqual(await rates.getRate('usd'), { currency: 'USD', rate: '1', source: 'USD parity', fetchedAt: OBSERVED_AT });
  const eur = await rates.getRate('EUR');
  assert.equal(eur.rate, SANDBOX_RATES.EUR);
  assert.match(eur.source, /fake/);
  assert.equal(await rates.supports('jpy'), true);
  assert.equal(await rates.supports('ZAR'), false);
  assert.equal(await rates.supports('NOPE'), false);
  await assert.rejects(rates.getRate('ZAR'), UnsupportedCurrencyError);
  await assert.rejects(rates.getRate('XYZ'), UnsupportedCurrencyError);
  assert.throws(() => new StaticRatesProvider({ rates: { EUR: '-1' } }), /invalid static rate/);
  assert.throws(() => new StaticRatesProvider({ rates: { XYZ: '1' } }), /invalid static rate/);
});

test('createRatesProvider: the fake table only in the sandbox; with real money and no rates URL, USD alone', async () => {
  const sandbox = createRatesProvider({ ratesUrl: undefined, ratesMaxAgeSeconds: 60, mode: 'sandbox' });
  assert.equal(await sandbox.supports('EUR'), true);
  const live = createRatesProvider({ ratesUrl: undefined, ratesMaxAgeSeconds: 60, mode: 'live' });
  assert.equal(await live.supports('USD'), true);
  assert.equal(await live.supports('EUR'), false);
  await assert.rejects(live.getRate('EUR'), UnsupportedCurrencyError);
  assert.equal((await live.getRate('USD')).rate, '1');
});
