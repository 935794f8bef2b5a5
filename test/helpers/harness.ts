import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { createService, type Service } from '../../src/main.ts';
import { createApiKey } from '../../src/merchants/api-keys.ts';
import { createMerchant } from '../../src/merchants/merchants.ts';

export type Engine = 'sqlite' | 'postgres';

const postgresUrl = process.env.TILL_TEST_POSTGRES_URL;

/** Every engine the suite runs on; PostgreSQL is skipped, visibly, without TILL_TEST_POSTGRES_URL. */
export const engines: { engine: Engine; skip: string | false }[] = [
  { engine: 'sqlite', skip: false },
  { engine: 'postgres', skip: postgresUrl ? false : 'PostgreSQL tests skipped: TILL_TEST_POSTGRES_URL is not set' },
];

/**
 * A suite for one engine. Without its engine the suite is one skipped test, so the runner's summary
 * counts it under "skipped" instead of passing over it in silence.
 */
export function describeOnEngine(title: string, skip: string | false, body: () => void): void {
  if (skip) test(title, { skip }, () => {});
  else describe(title, body);
}

/** A database of its own for one test file: a fresh SQLite file, or a fresh PostgreSQL database. */
export async function createTestDatabase(engine: Engine): Promise<{ url: string; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'till-test-'));
    return { url: `sqlite:${join(dir, 'till.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error('TILL_TEST_POSTGRES_URL is not set');
  const name = `till_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export type TestService = Service & {
  config: Config;
  /** A new merchant with a key valid in the service's mode. */
  merchant(options?: { name?: string; walletAddress?: string | null }): Promise<{ merchantId: string; apiKey: string; keyId: string }>;
  stop(): Promise<void>;
};

/** Background workers stay off unless a test asks for them, so it controls every delivery itself. */
export async function startTestService(engine: Engine, env: Record<string, string> = {}, options: { now?: () => number; workers?: boolean } = {}): Promise<TestService> {
  const database = await createTestDatabase(engine);
  const dataDir = mkdtempSync(join(tmpdir(), 'till-data-'));
  const config = loadConfig({
    TILL_DATABASE_URL: database.url,
    TILL_DATA_DIR: dataDir,
    TILL_SECRET_KEY: randomBytes(32).toString('hex'),
    TILL_LOG_LEVEL: 'silent',
    PORT: '0',
    TILL_BASE_URL: 'http://till.test',
    ...env,
  });
  const service = await createService(config, { log: pino({ level: process.env.TILL_TEST_LOG_LEVEL ?? 'silent' }), ...(options.now ? { now: options.now } : {}), workers: options.workers ?? false });
  return {
    ...service,
    config,
    async merchant(options = {}) {
      const merchant = await createMerchant(service.context.db, { name: options.name ?? 'Test merchant', walletAddress: options.walletAddress ?? null });
      const key = await createApiKey(service.context.db, merchant.id, config.mode === 'sandbox' ? 'test' : 'live');
      return { merchantId: merchant.id, apiKey: key.apiKey, keyId: key.keyId };
    },
    async stop() {
      await service.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A service paying through a real sandbox chain and facilitator, started in this process. */
export async function startPayingService(engine: Engine, env: Record<string, string> = {}, options: { faultControls?: boolean; workers?: boolean; blockIntervalMs?: number } = {}) {
  const { startSandbox } = await import('../../src/sandbox/index.ts');
  const sandbox = await startSandbox({ faultControls: options.faultControls ?? false, blockIntervalMs: options.blockIntervalMs ?? 0 });
  const service = await startTestService(engine, {
    TILL_SANDBOX: 'true',
    TILL_FACILITATOR_URL: sandbox.facilitatorUrl,
    TILL_BASE_RPC_URL: sandbox.rpcUrl,
    TILL_USDC_ADDRESS: sandbox.usdcAddress,
    TILL_SANDBOX_URL: sandbox.url,
    ...env,
  }, { workers: options.workers ?? false });
  const baseUrl = await service.app.listen({ port: 0, host: '127.0.0.1' });
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

/** A paying service with one merchant whose payout wallet is a fresh address, and a way to open sessions for it. */
export async function startPayingShop(engine: Engine, env: Record<string, string> = {}, options: Parameters<typeof startPayingService>[2] & { name?: string } = {}) {
  const { privateKeyToAccount, generatePrivateKey } = await import('viem/accounts');
  const paying = await startPayingService(engine, env, options);
  const merchantWallet = privateKeyToAccount(generatePrivateKey()).address;
  const { apiKey, merchantId } = await paying.service.merchant({ ...(options.name ? { name: options.name } : {}), walletAddress: merchantWallet });
  return {
    ...paying,
    apiKey,
    merchantId,
    merchantWallet,
    /** Creates a session through the API, as the merchant's server would, and returns its id. */
    async createSession(body: Record<string, unknown>): Promise<string> {
      const response = await fetch(`${paying.baseUrl}/api/checkout/v2/payment_session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey }, body: JSON.stringify(body) });
      if (response.status !== 201) throw new Error(`creating a session answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { sessionId: string }).sessionId;
    },
  };
}
