// Suites run on every engine, and Till services started in the test's own process.
import { describe, test } from 'node:test';
import { type Logger, pino } from 'pino';
import { type Config, loadConfig } from '../config.ts';
import { type CreateServiceOptions, createService, type Service } from '../main.ts';
import type { RatesProvider } from '../money/rates.ts';
import { startSandbox } from '../sandbox/index.ts';
import { createServiceStorage, type Engine, freePort, sandboxSettings } from './environment.ts';
import { type Authorization, newAccount } from './payer.ts';
import { challenge, createMerchant, createSession, fundedPayer, type MerchantOptions, pay, signedPayment, type TestMerchant, type X402Offer } from './shop.ts';

export type { Engine };

/** Every engine the suite runs on; PostgreSQL is skipped, visibly, without TILL_TEST_POSTGRES_URL. */
export const engines: { engine: Engine; skip: string | false }[] = [
  { engine: 'sqlite', skip: false },
  { engine: 'postgres', skip: process.env.TILL_TEST_POSTGRES_URL ? false : 'PostgreSQL tests skipped: TILL_TEST_POSTGRES_URL is not set' },
];

/**
 * A suite for one engine. Without its engine the suite is one skipped test, so the runner's summary
 * counts it under "skipped" instead of passing over it in silence.
 */
export function describeOnEngine(title: string, skip: string | false, body: () => void): void {
  if (skip) test(title, { skip }, () => {});
  else describe(title, body);
}

export type TestService = Service & {
  config: Config;
  /** A new merchant with a key valid in the service's mode. */
  merchant(options?: Omit<MerchantOptions, 'keyMode'>): Promise<TestMerchant>;
  stop(): Promise<void>;
};

/**
 * Live mode refuses plain http and a missing RPC; a live service under test reaches stand-ins on this
 * machine, so it is given the development flag, an https public URL and an RPC address.
 */
export const LIVE_STAND_INS = { TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true', TILL_BASE_URL: 'https://till.test', TILL_BASE_RPC_URL: 'http://127.0.0.1:9' };

/** Background workers stay off unless a test asks for them, so it controls every delivery itself. */
export async function startTestService(
  engine: Engine,
  env: Record<string, string> = {},
  options: {
    now?: () => number;
    workers?: boolean;
    rates?: RatesProvider;
    onQuery?: CreateServiceOptions['onQuery'];
    log?: Logger;
    /** The modes the service serves, whatever its settings say (both, say, on a sandbox's settings). */
    modes?: Config['modes'];
  } = {},
): Promise<TestService> {
  const storage = await createServiceStorage(engine);
  const loaded = loadConfig({
    ...storage.settings,
    TILL_LOG_LEVEL: 'silent',
    PORT: '0',
    TILL_BASE_URL: 'http://till.test',
    ...(env.TILL_FACILITATOR_URL && env.TILL_SANDBOX !== 'true' ? LIVE_STAND_INS : {}),
    ...env,
  });
  const config = options.modes ? { ...loaded, modes: options.modes } : loaded;
  const service = await createService(config, {
    log: options.log ?? pino({ level: process.env.TILL_TEST_LOG_LEVEL ?? 'silent' }),
    ...(options.now ? { now: options.now } : {}),
    ...(options.rates ? { rates: options.rates } : {}),
    ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    workers: options.workers ?? false,
  });
  return {
    ...service,
    config,
    merchant: (options = {}) => createMerchant(service.context.db, { ...options, keyMode: config.mode === 'sandbox' ? 'test' : 'live' }),
    async stop() {
      await service.close();
      await storage.drop();
    },
  };
}

/** A test service listening on a free port of 127.0.0.1, with that address as its base URL (and so its MCP token audience). */
export async function startListeningTestService(
  engine: Engine,
  env: Record<string, string> = {},
  options: Parameters<typeof startTestService>[2] = {},
): Promise<TestService & { baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const service = await startTestService(engine, { TILL_BASE_URL: baseUrl, ...env }, options);
  await service.app.listen({ port, host: '127.0.0.1' });
  return { ...service, baseUrl };
}

export type PayingService = Awaited<ReturnType<typeof startPayingService>>;

/** A service paying through a real sandbox chain and facilitator, started in this process. */
export async function startPayingService(
  engine: Engine,
  env: Record<string, string> = {},
  options: {
    faultControls?: boolean;
    workers?: boolean;
    blockIntervalMs?: number;
    onQuery?: CreateServiceOptions['onQuery'];
    log?: Logger;
    /** The modes the service serves, whatever its settings say. */
    modes?: Config['modes'];
    /** Listen on this port of 127.0.0.1 (a free one otherwise), as when TILL_BASE_URL names it for tokens' audience. */
    port?: number;
  } = {},
) {
  const sandbox = await startSandbox({ faultControls: options.faultControls ?? false, blockIntervalMs: options.blockIntervalMs ?? 0 });
  const service = await startTestService(
    engine,
    { ...sandboxSettings(sandbox), ...env },
    {
      workers: options.workers ?? false,
      ...(options.onQuery ? { onQuery: options.onQuery } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(options.modes ? { modes: options.modes } : {}),
    },
  );
  const baseUrl = await service.app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  return {
    service,
    sandbox,
    baseUrl,
    async stop() {
      await service.stop();
      await sandbox.stop();
    },
  };
}

export type PayingShop = Awaited<ReturnType<typeof startPayingShop>>;

/**
 * A paying service with one merchant whose payout wallet is a fresh address, and what its server
 * and its buyers do: open sessions, ask for their challenges, fund payers and pay.
 */
export async function startPayingShop(
  engine: Engine,
  env: Record<string, string> = {},
  options: Parameters<typeof startPayingService>[2] & { name?: string } = {},
) {
  const paying = await startPayingService(engine, env, options);
  const merchantWallet = newAccount().address;
  const { apiKey, merchantId } = await paying.service.merchant({ ...(options.name ? { name: options.name } : {}), walletAddress: merchantWallet });
  const { baseUrl, sandbox } = paying;
  return {
    ...paying,
    apiKey,
    merchantId,
    merchantWallet,
    /** Creates a session through the API, as the merchant's server would, and returns its id. */
    createSession: (body: Record<string, unknown>) => createSession(baseUrl, apiKey, body),
    /** The offer of a session's 402 challenge. */
    challenge: (sessionId: string, query = '') => challenge(baseUrl, sessionId, query),
    /** A new account holding `usdc` (1 unless given) test USDC. */
    fundedPayer: (usdc = '1') => fundedPayer(sandbox, usdc),
    /** `payer`'s X-PAYMENT for what `offer` asks. */
    signedPayment: (payer: Parameters<typeof signedPayment>[0], offer: Pick<X402Offer, 'payTo' | 'value'>, overrides: Partial<Authorization> = {}) =>
      signedPayment(payer, sandbox.usdcAddress, offer, overrides),
    /** Requests the session with an X-PAYMENT proof. */
    pay: (sessionId: string, xPayment: string, query = '') => pay(baseUrl, sessionId, xPayment, query),
    /** A new session, a payer funded with 1 USDC, and the offer of the session's challenge. */
    async readyToPay(body: Record<string, unknown>) {
      const sessionId = await createSession(baseUrl, apiKey, body);
      const payer = await fundedPayer(sandbox);
      return { sessionId, payer, offer: await challenge(baseUrl, sessionId) };
    },
  };
}
