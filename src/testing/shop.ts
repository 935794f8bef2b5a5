// A merchant, its payment sessions and its buyers, as tests and benches set them up: the one place
// that creates merchants and keys, calls E1/E2 with an API key, asks for a session's x402 challenge,
// funds payers on the sandbox chain and signs their X-PAYMENT.
//
// Requests go either to a service in this process (`{ app }`, answered by inject, giving its
// response) or to the base URL of a listening one (answered by fetch, giving a fetch Response).
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Address, LocalAccount } from 'viem';
import type { Db } from '../db/index.ts';
import { createApiKey, type KeyMode } from '../merchants/api-keys.ts';
import { createMerchant as insertMerchant } from '../merchants/merchants.ts';
import { type Authorization, newAccount, signedXPayment } from './payer.ts';

/** E1 (POST), E2 (PUT) and, with `/{sessionId}`, the merchant's read of a session. */
export const SESSIONS_PATH = '/api/checkout/v2/payment_session';

/** A service in this process. */
export type InProcess = { app: Pick<FastifyInstance, 'inject'> };

export type TestMerchant = { merchantId: string; apiKey: string; keyId: string };

export type MerchantOptions = {
  name?: string;
  /** The payout wallet, of both modes; none unless given. */
  walletAddress?: string | null;
  /** The key's mode: `test` (the sandbox's) unless given. */
  keyMode?: KeyMode;
};

/** A merchant with one API key, written straight to the database. */
export async function createMerchant(db: Db, options: MerchantOptions = {}): Promise<TestMerchant> {
  const merchant = await insertMerchant(db, {
    name: options.name ?? 'Test merchant',
    wallets: { sandbox: options.walletAddress ?? null, live: options.walletAddress ?? null },
  });
  const key = await createApiKey(db, merchant.id, options.keyMode ?? 'test');
  return { merchantId: merchant.id, apiKey: key.apiKey, keyId: key.keyId };
}

/** The headers of a JSON call to the merchant API; without a key, no X-SC-ApiKey at all. */
export function apiHeaders(apiKey?: string): Record<string, string> {
  return { 'content-type': 'application/json', ...(apiKey ? { 'x-sc-apikey': apiKey } : {}) };
}

/**
 * E1 (POST) or E2 (PUT) as the merchant's server calls it. A string body is sent as it is (to test
 * malformed JSON), anything else as JSON; `headers` are added last, so they may replace the content type.
 */
export function sessionRequest(
  target: InProcess,
  apiKey: string | undefined,
  method: 'POST' | 'PUT',
  body: unknown,
  headers?: Record<string, string>,
): Promise<LightMyRequestResponse>;
export function sessionRequest(
  baseUrl: string,
  apiKey: string | undefined,
  method: 'POST' | 'PUT',
  body: unknown,
  headers?: Record<string, string>,
): Promise<Response>;
export function sessionRequest(
  target: InProcess | string,
  apiKey: string | undefined,
  method: 'POST' | 'PUT',
  body: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse | Response> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const allHeaders = { ...apiHeaders(apiKey), ...headers };
  if (typeof target === 'string') return fetch(target + SESSIONS_PATH, { method, headers: allHeaders, body: payload });
  return target.app.inject({ method, url: SESSIONS_PATH, headers: allHeaders, payload });
}

/** The merchant's read of one session. */
export function readSession(target: InProcess, apiKey: string, sessionId: string): Promise<LightMyRequestResponse>;
export function readSession(baseUrl: string, apiKey: string, sessionId: string): Promise<Response>;
export function readSession(target: InProcess | string, apiKey: string, sessionId: string): Promise<LightMyRequestResponse | Response> {
  const path = `${SESSIONS_PATH}/${sessionId}`;
  const headers = { 'x-sc-apikey': apiKey };
  if (typeof target === 'string') return fetch(target + path, { headers });
  return target.app.inject({ method: 'GET', url: path, headers });
}

/** Creates a session through E1, checks that it answered 201, and returns the session's id. */
export async function createSession(target: InProcess | string, apiKey: string, body: Record<string, unknown> | string): Promise<string> {
  const [status, text] =
    typeof target === 'string'
      ? await sessionRequest(target, apiKey, 'POST', body).then(async (response) => [response.status, await response.text()] as const)
      : await sessionRequest(target, apiKey, 'POST', body).then((response) => [response.statusCode, response.body] as const);
  assert.equal(status, 201, `creating a session answered ${status}: ${text}`);
  return (JSON.parse(text) as { sessionId: string }).sessionId;
}

/** Where a session is paid over x402. */
export const x402Url = (baseUrl: string, sessionId: string, query = '') => `${baseUrl}/x402/session/${sessionId}${query}`;

/** The one entry of a challenge's `accepts`, with its amount as a bigint in `value`. */
export type X402Offer = {
  scheme: string;
  network: string;
  asset: Address;
  payTo: Address;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
  value: bigint;
};

/** Asks for a session's challenge (which stores the quote), checks that it is a 402, and returns its offer. */
export async function challenge(baseUrl: string, sessionId: string, query = ''): Promise<X402Offer> {
  const response = await fetch(x402Url(baseUrl, sessionId, query));
  assert.equal(response.status, 402);
  const [offer] = ((await response.json()) as { accepts: Omit<X402Offer, 'value'>[] }).accepts;
  assert.ok(offer, 'the challenge makes an offer');
  return { ...offer, value: BigInt(offer.maxAmountRequired) };
}

/** Sends a request for a session with an X-PAYMENT proof. */
export const pay = (baseUrl: string, sessionId: string, xPayment: string, query = '') =>
  fetch(x402Url(baseUrl, sessionId, query), { headers: { 'x-payment': xPayment } });

/** What funds payers: a sandbox in this process, or one over HTTP. */
export type Faucet = { fund(address: string, usdc: string): Promise<unknown> };

/** A new account holding `usdc` (1 unless given) test USDC. */
export async function fundedPayer(sandbox: Faucet, usdc = '1') {
  const payer = newAccount();
  await sandbox.fund(payer.address, usdc);
  return payer;
}

/** `payer`'s X-PAYMENT for exactly what `offer` asks, valid from now for 60 s unless overridden. */
export function signedPayment(payer: LocalAccount, usdcAddress: Address, offer: Pick<X402Offer, 'payTo' | 'value'>, overrides: Partial<Authorization> = {}) {
  return signedXPayment(payer, usdcAddress, offer.payTo, offer.value, overrides);
}
