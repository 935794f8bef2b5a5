import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createUser, findUserByEmail } from '../accounts/users.ts';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import type { Db } from '../db/index.ts';
import { createApiKey } from '../merchants/api-keys.ts';
import { countMerchants, createMerchant } from '../merchants/merchants.ts';
import { DEMO_USER_EMAIL, SANDBOX_PAYOUT_KEY_FILE } from './demo.ts';
import { liveReadiness } from './live.ts';
import { liveStartChecks, sandboxDataRefusal, startRefusal } from './live-checks.ts';
import { noneLeft } from './output.ts';
import { ensureSandbox, type SandboxEndpoints } from './sandbox.ts';
import { generatePassword } from './users.ts';

/**
 * Test mode pays through a sandbox reached over HTTP only: the one its settings name, else (one
 * instance) the built-in one `till serve` finds or starts beside it. Several instances beside live
 * share one sandbox (TILL_SANDBOX_URL), never one chain each.
 */
async function withSandbox(config: Config): Promise<{ config: Config; sandbox: SandboxEndpoints | undefined }> {
  const test = config.chains.sandbox;
  if (!test || process.env.TILL_NO_SANDBOX === 'true') return { config, sandbox: undefined };
  if (test.facilitatorUrl && (test.usdcAddress || config.mode === 'sandbox')) return { config, sandbox: undefined };
  if (config.mode === 'live' && !config.sandboxUrl && (test.facilitatorUrl || config.databaseKind === 'postgres'))
    throw new ConfigError(
      test.facilitatorUrl ? 'TILL_TEST_USDC_ADDRESS' : 'TILL_SANDBOX_URL',
      test.facilitatorUrl
        ? 'is required with TILL_TEST_FACILITATOR_URL: the token test mode is paid in'
        : 'is required for test mode beside live on PostgreSQL: run `till sandbox` as its own service and give its URL, so every instance pays on one test chain (or TILL_MODES=live for live only)',
    );
  const sandbox = await ensureSandbox(config);
  const chain = {
    ...test,
    facilitatorUrl: test.facilitatorUrl ?? sandbox.facilitatorUrl,
    rpcUrl: test.rpcUrl ?? sandbox.rpcUrl,
    usdcAddress: test.usdcAddress ?? sandbox.usdcAddress,
  };
  const main = config.mode === 'sandbox' ? { facilitatorUrl: chain.facilitatorUrl, baseRpcUrl: chain.rpcUrl, usdcAddress: chain.usdcAddress } : {};
  return { config: { ...config, ...main, chains: { ...config.chains, sandbox: chain }, sandboxUrl: sandbox.url }, sandbox };
}

export { SANDBOX_PAYOUT_KEY_FILE };

/**
 * The demo merchant, its key and its user, in one transaction. Instances started at once on an
 * empty database all try: the one whose user is written first makes it, the others (refused on the
 * user's unique email, their merchant rolled back) start without. Undefined when another made it.
 */
export async function createDemoMerchant(db: Db, dataDir: string) {
  const payoutKey = generatePrivateKey();
  const wallet = privateKeyToAccount(payoutKey).address;
  const password = generatePassword();
  try {
    const demo = await db.transaction().execute(async (trx) => {
      const merchant = await createMerchant(trx, { name: 'Demo store (sandbox)', wallets: { sandbox: wallet } });
      const key = await createApiKey(trx, merchant.id, 'test');
      const user = await createUser(trx, { merchantId: merchant.id, email: DEMO_USER_EMAIL, password });
      return { merchantId: merchant.id, wallet, apiKey: key.apiKey, email: user.email, password };
    });
    // Sandbox only: the demo payout wallet's key, so its refunds can be signed with the sandbox wallet (fake money).
    const payoutKeyFile = join(dataDir, SANDBOX_PAYOUT_KEY_FILE);
    writeFileSync(payoutKeyFile, `${payoutKey}\n`, { mode: 0o600 });
    return { ...demo, payoutKeyFile };
  } catch (error) {
    if (await findUserByEmail(db, DEMO_USER_EMAIL)) return undefined;
    throw error;
  }
}

/**
 * A live start asks the facilitator and the chain what a first payment would, and refuses with the
 * setting to fix rather than serving and failing at the first real buyer.
 */
async function refuseUnreadyLive(config: Config): Promise<void> {
  const refusal = startRefusal(await liveStartChecks(config));
  if (refusal) throw refusal;
  if (!config.ratesUrl)
    process.stderr.write(
      'till: live mode without TILL_RATES_URL accepts USD sessions only: a session in another currency cannot be paid until TILL_RATES_URL names an exchange-rates document\n',
    );
}

export async function serveCommand(args: string[]): Promise<void> {
  noneLeft(args);
  const given = loadConfig();
  if (given.mode === 'live') await refuseUnreadyLive(given);
  // The sandbox boots in a process of its own: start it first and load the service's modules while it does.
  const sandboxReady = withSandbox(given);
  // Its failure is reported where it is awaited below, not as an unhandled rejection meanwhile.
  sandboxReady.catch(() => {});
  let createService: typeof import('../main.ts').createService;
  try {
    ({ createService } = await import('../main.ts'));
  } catch (error) {
    await (await sandboxReady.catch(() => undefined))?.sandbox?.spawned?.stop();
    throw error;
  }
  const { config, sandbox } = await sandboxReady;
  // A person at a terminal reads lines; anything else (a file, a pipe, a log collector) gets JSON.
  const service = await createService(config, { logFormat: process.stdout.isTTY ? 'pretty' : 'json' });
  const { log, db } = service.context;
  // Beside test mode, a sandbox database is test mode's data and stays; a live-only deployment still refuses it until prepared.
  if (config.mode === 'live' && !config.modes.includes('sandbox')) {
    const refusal = sandboxDataRefusal(await liveReadiness(db, config.dataDir));
    if (refusal) {
      await service.close();
      throw refusal;
    }
  }

  // First start of a sandbox with an empty database: a demo merchant, so the README walkthrough works at once.
  if (config.mode === 'sandbox' && (await countMerchants(db)) === 0) {
    const demo = await createDemoMerchant(db, config.dataDir);
    if (demo)
      process.stdout.write(
        `\n  Sandbox demo merchant ${demo.merchantId} created, paid out to ${demo.wallet} (its key, for refunds with fake money: ${demo.payoutKeyFile}).\n  TEST API key (sandbox only, fake money; shown once): ${demo.apiKey}\n  Sign in at ${config.baseUrl}/sign-in as ${demo.email} with password (shown once): ${demo.password}\n\n`,
      );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await service.close();
    await sandbox?.spawned?.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await service.app.listen({ port: config.port, host: config.host });
  // Test only is still "sandbox", as it always was; a live deployment names the modes it serves.
  const serving = config.mode === 'sandbox' ? 'sandbox' : config.modes.includes('sandbox') ? 'live and test' : 'live only';
  log.info({ baseUrl: config.baseUrl, mode: config.mode, modes: config.modes, database: config.databaseKind }, 'serving');
  if (sandbox)
    process.stdout.write(
      `Sandbox chain (fake money${config.mode === 'live' ? ', test mode' : ''}): JSON-RPC ${config.baseUrl}/sandbox/rpc, faucet ${config.baseUrl}/sandbox/faucet, token ${config.chains.sandbox?.usdcAddress}\n`,
    );
  process.stdout.write(`Till is serving on ${config.baseUrl} (${serving}, ${config.databaseKind}). API reference: ${config.baseUrl}/docs\n`);
}
