import { type Config, loadConfig } from '../config.ts';
import { noneLeft } from './output.ts';
import { ensureSandbox, type SandboxEndpoints } from './sandbox.ts';

/** With no real facilitator configured, payments go through the local sandbox, reached over HTTP only. */
async function withSandbox(config: Config): Promise<{ config: Config; sandbox: SandboxEndpoints | undefined }> {
  if (config.mode !== 'sandbox' || config.facilitatorUrl || process.env.TILL_NO_SANDBOX === 'true') return { config, sandbox: undefined };
  const sandbox = await ensureSandbox(config);
  return {
    config: {
      ...config,
      facilitatorUrl: sandbox.facilitatorUrl,
      baseRpcUrl: sandbox.rpcUrl,
      usdcAddress: config.usdcAddress ?? sandbox.usdcAddress,
      sandboxUrl: sandbox.url,
    },
    sandbox,
  };
}

/** What the service and its first start need, loaded once the sandbox is on its way. */
async function serviceModules() {
  const [main, merchants, apiKeys, users, cliUsers, accounts] = await Promise.all([
    import('../main.ts'),
    import('../merchants/merchants.ts'),
    import('../merchants/api-keys.ts'),
    import('../accounts/users.ts'),
    import('./users.ts'),
    import('viem/accounts'),
  ]);
  return {
    createService: main.createService,
    countMerchants: merchants.countMerchants,
    createMerchant: merchants.createMerchant,
    createApiKey: apiKeys.createApiKey,
    createUser: users.createUser,
    generatePassword: cliUsers.generatePassword,
    generatePrivateKey: accounts.generatePrivateKey,
    privateKeyToAccount: accounts.privateKeyToAccount,
  };
}

/** The sandbox demo merchant's user; `till users reset-password --email demo@till.localhost` if its password is lost. */
export const DEMO_USER_EMAIL = 'demo@till.localhost';

export async function serveCommand(args: string[]): Promise<void> {
  noneLeft(args);
  // The sandbox boots in a process of its own: start it first and load the service's modules while it does.
  const sandboxReady = withSandbox(loadConfig());
  // Its failure is reported where it is awaited below, not as an unhandled rejection meanwhile.
  sandboxReady.catch(() => {});
  let modules: Awaited<ReturnType<typeof serviceModules>>;
  try {
    modules = await serviceModules();
  } catch (error) {
    await (await sandboxReady.catch(() => undefined))?.sandbox?.spawned?.stop();
    throw error;
  }
  const { createService, countMerchants, createMerchant, createApiKey, createUser, generatePassword, generatePrivateKey, privateKeyToAccount } = modules;
  const { config, sandbox } = await sandboxReady;
  const service = await createService(config);
  const { log, db } = service.context;

  // First start of a sandbox with an empty database: a demo merchant, so the README walkthrough works at once.
  if (config.mode === 'sandbox' && (await countMerchants(db)) === 0) {
    const wallet = privateKeyToAccount(generatePrivateKey()).address;
    const merchant = await createMerchant(db, { name: 'Demo store (sandbox)', walletAddress: wallet });
    const key = await createApiKey(db, merchant.id, 'test');
    const password = generatePassword();
    const user = await createUser(db, { merchantId: merchant.id, email: DEMO_USER_EMAIL, password });
    process.stdout.write(
      `\n  Sandbox demo merchant ${merchant.id} created, paid out to ${wallet}.\n  TEST API key (sandbox only, fake money; shown once): ${key.apiKey}\n  Sign in at ${config.baseUrl}/sign-in as ${user.email} with password (shown once): ${password}\n\n`,
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
  log.info({ baseUrl: config.baseUrl, mode: config.mode, database: config.databaseKind }, 'serving');
  if (sandbox)
    process.stdout.write(
      `Sandbox chain (fake money): JSON-RPC ${config.baseUrl}/sandbox/rpc, faucet ${config.baseUrl}/sandbox/faucet, token ${config.usdcAddress}\n`,
    );
  process.stdout.write(`Till is serving on ${config.baseUrl} (${config.mode}, ${config.databaseKind}). API reference: ${config.baseUrl}/docs\n`);
}
