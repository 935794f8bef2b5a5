// A live start refuses every misconfiguration that would otherwise fail at the first real payment,
// with a sentence naming the setting and the fix. Settings checked without the network are refused
// by loadConfig; what needs the facilitator or the chain is asked by `till serve` before it listens.
//
// Stand-ins: Coinbase's facilitator and Base's RPC cannot be reached from this machine, so small
// local servers answer as a wrong one would (a facilitator settling only Base Sepolia, an RPC of
// Base Sepolia, a token whose EIP-712 name is Base Sepolia USDC's "USDC").
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFacilitatorConfig } from '@coinbase/x402';
import { createUser, findUserByEmail, removeUser } from '../src/accounts/users.ts';
import { DEMO_USER_EMAIL } from '../src/cli/demo.ts';
import { createDemoMerchant } from '../src/cli/serve.ts';
import { BASE_USDC_ADDRESS } from '../src/common/network.ts';
import { COINBASE_FACILITATOR_URL, ConfigError, loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createService } from '../src/main.ts';
import { findMerchant } from '../src/merchants/merchants.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { temporaryDirectories } from '../src/testing/environment.ts';
import { newAccount } from '../src/testing/payer.ts';
import { createMerchant, createSession } from '../src/testing/shop.ts';
import { listen, standInFacilitator, standInRpc } from '../src/testing/stand-ins.ts';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const freshDir = temporaryDirectories('till-going-live-');

/** A provider's key, as RPC URLs carry it (`https://base-mainnet.g.alchemy.com/v2/KEY`). */
const RPC_KEY = 'alch-k3y-4f9e2b';

const LIVE = {
  TILL_FACILITATOR_URL: 'https://facilitator.example',
  TILL_BASE_RPC_URL: 'https://base-rpc.example',
  TILL_BASE_URL: 'https://pay.example',
};

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ TILL_DATA_DIR: freshDir(), ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  assert.fail(`expected a refusal for ${JSON.stringify(env)}`);
}

describe('refused at start without the network, naming the setting', () => {
  test('a complete live configuration loads', () => {
    const config = loadConfig({ TILL_DATA_DIR: freshDir(), ...LIVE });
    assert.equal(config.mode, 'live');
    assert.equal(config.usdcAddress, BASE_USDC_ADDRESS);
  });

  test('no TILL_BASE_RPC_URL on a role that runs the reconciler; an api-only instance may go without', () => {
    for (const role of ['all', 'worker']) {
      const error = refusal({
        ...LIVE,
        TILL_BASE_RPC_URL: '',
        TILL_ROLE: role,
        TILL_DATABASE_URL: 'postgres://till@db.example/till',
        TILL_SECRET_KEY: 'a'.repeat(64),
      });
      assert.equal(error.setting, 'TILL_BASE_RPC_URL');
      assert.match(error.message, /TILL_BASE_RPC_URL.*required in live mode on role "(all|worker)".*reconciler/);
    }
    const api = loadConfig({
      TILL_DATA_DIR: freshDir(),
      ...LIVE,
      TILL_BASE_RPC_URL: '',
      TILL_ROLE: 'api',
      TILL_DATABASE_URL: 'postgres://till@db.example/till',
      TILL_SECRET_KEY: 'a'.repeat(64),
    });
    assert.equal(api.baseRpcUrl, undefined);
  });

  test('plain http for the facilitator, the RPC or the public URLs', () => {
    for (const [setting, url] of [
      ['TILL_FACILITATOR_URL', 'http://facilitator.example'],
      ['TILL_BASE_RPC_URL', 'http://base-rpc.example'],
      ['TILL_BASE_URL', 'http://pay.example'],
      ['TILL_AUTH_URL', 'http://auth.example'],
      ['TILL_MCP_URL', 'http://mcp.example'],
    ] as const) {
      const error = refusal({ ...LIVE, [setting]: url });
      assert.equal(error.setting, setting);
      assert.match(error.message, new RegExp(`Invalid setting ${setting}: ${url.replace(/\./g, '\\.')} is plain http, refused in live mode: use an https URL`));
    }
    // The default public URL (http://localhost:8080) is plain http too.
    assert.equal(refusal({ ...LIVE, TILL_BASE_URL: '' }).setting, 'TILL_BASE_URL');
  });

  test("an RPC URL is shown as https://host/… only: its path and query hold the provider's key", () => {
    const plain = refusal({ ...LIVE, TILL_BASE_RPC_URL: `http://base-mainnet.example/v2/${RPC_KEY}?token=${RPC_KEY}` });
    assert.match(plain.message, /Invalid setting TILL_BASE_RPC_URL: http:\/\/base-mainnet\.example\/… is plain http/);
    const malformed = refusal({ ...LIVE, TILL_BASE_RPC_URL: `base-mainnet.example/v2/${RPC_KEY}` });
    assert.equal(malformed.setting, 'TILL_BASE_RPC_URL');
    for (const error of [plain, malformed]) assert.doesNotMatch(error.message, new RegExp(RPC_KEY));
  });

  test('http to this machine only with the development flag, and never to another host', () => {
    const local = { TILL_FACILITATOR_URL: 'http://127.0.0.1:4021', TILL_BASE_RPC_URL: 'http://localhost:8545', TILL_BASE_URL: 'http://[::1]:8080' };
    assert.equal(refusal({ ...LIVE, ...local }).setting, 'TILL_FACILITATOR_URL');
    assert.match(refusal({ ...LIVE, ...local }).message, /TILL_DEV_ALLOW_HTTP_LOOPBACK=true allows http to this machine, for development only/);
    assert.equal(loadConfig({ TILL_DATA_DIR: freshDir(), ...LIVE, ...local, TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true' }).mode, 'live');
    const remote = refusal({ ...LIVE, ...local, TILL_BASE_RPC_URL: 'http://10.0.0.7:8545', TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true' });
    assert.equal(remote.setting, 'TILL_BASE_RPC_URL');
  });

  test("TILL_SANDBOX=true with Base's real USDC", () => {
    const error = refusal({ ...LIVE, TILL_SANDBOX: 'true', TILL_USDC_ADDRESS: BASE_USDC_ADDRESS.toLowerCase() });
    assert.equal(error.setting, 'TILL_SANDBOX');
    assert.match(error.message, /Base's real USDC.*test keys would take real money/);
  });

  test("Coinbase's facilitator: the package's URL by default, and a CDP API key required", () => {
    assert.equal(COINBASE_FACILITATOR_URL, createFacilitatorConfig().url);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const keyed = { TILL_FACILITATOR: 'coinbase', CDP_API_KEY_ID: 'key-id', CDP_API_KEY_SECRET: pkcs8 };
    const config = loadConfig({ TILL_DATA_DIR: freshDir(), ...LIVE, TILL_FACILITATOR_URL: '', ...keyed });
    assert.equal(config.facilitatorUrl, COINBASE_FACILITATOR_URL);
    assert.deepEqual(config.facilitator, { kind: 'coinbase', apiKeyId: 'key-id', apiKeySecret: pkcs8 });
    // The portal's SEC1 PEM, pasted on one line with \n, is the same key in the form the package signs with.
    const sec1 = privateKey.export({ type: 'sec1', format: 'pem' }).toString().replaceAll('\n', '\\n');
    assert.deepEqual(loadConfig({ TILL_DATA_DIR: freshDir(), ...LIVE, ...keyed, CDP_API_KEY_SECRET: sec1 }).facilitator, config.facilitator);
    const ed25519 = Buffer.alloc(64, 7).toString('base64');
    assert.equal(
      (loadConfig({ TILL_DATA_DIR: freshDir(), ...LIVE, ...keyed, CDP_API_KEY_SECRET: ed25519 }).facilitator as { apiKeySecret: string }).apiKeySecret,
      ed25519,
    );
    assert.equal(refusal({ ...LIVE, ...keyed, CDP_API_KEY_SECRET: 'not-a-key' }).setting, 'CDP_API_KEY_SECRET');
    for (const missing of ['CDP_API_KEY_ID', 'CDP_API_KEY_SECRET']) {
      const error = refusal({ ...LIVE, ...keyed, [missing]: '' });
      assert.equal(error.setting, missing);
      assert.match(error.message, /required with TILL_FACILITATOR=coinbase/);
    }
    assert.equal(refusal({ ...LIVE, TILL_FACILITATOR: 'cdp' }).setting, 'TILL_FACILITATOR');
  });
});

describe('refused by `till serve` after asking the facilitator and the chain', () => {
  const servers = {
    base: standInRpc(8453, 'USD Coin'),
    tenBlockPlan: standInRpc(8453, 'USD Coin', { limit: 10 }),
    noLogs: standInRpc(8453, 'USD Coin', 'unavailable'),
    sepolia: standInRpc(84532, 'USD Coin'),
    sepoliaToken: standInRpc(8453, 'USDC'),
    facilitator: standInFacilitator(['eip155:8453']),
    sepoliaFacilitator: standInFacilitator(['eip155:84532']),
  };
  const urls: Record<keyof typeof servers, string> = {} as never;
  before(async () => {
    for (const [name, server] of Object.entries(servers)) urls[name as keyof typeof servers] = await listen(server);
  });
  after(() => Promise.all(Object.values(servers).map((server) => new Promise((resolve) => server.close(resolve)))));

  const serve = (env: Record<string, string>) =>
    runNodeScript(CLI, ['serve'], {
      env: {
        PATH: process.env.PATH,
        TILL_DATA_DIR: freshDir(),
        TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true',
        PORT: '0',
        TILL_FACILITATOR_URL: urls.facilitator,
        TILL_BASE_RPC_URL: urls.base,
        TILL_MODES: 'live',
        ...env,
      },
      timeoutMs: 60_000,
    });

  const doctorWithRpc = (rpcUrl: string) =>
    runNodeScript(CLI, ['doctor', '--json'], {
      env: {
        PATH: process.env.PATH,
        TILL_DATA_DIR: freshDir(),
        TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true',
        TILL_FACILITATOR_URL: urls.facilitator,
        TILL_BASE_RPC_URL: rpcUrl,
      },
    });

  /** A sandbox service on this data folder, as `npm start` leaves its database (no workers). */
  const sandboxService = (dataDir: string) =>
    createService(loadConfig({ TILL_DATA_DIR: dataDir, TILL_SANDBOX: 'true', TILL_FACILITATOR_URL: 'http://127.0.0.1:9', TILL_LOG_LEVEL: 'silent' }), {
      workers: false,
    });

  /** The live settings of an operator's commands on this data folder. */
  const liveSettings = (dataDir: string) => ({
    PATH: process.env.PATH,
    TILL_DATA_DIR: dataDir,
    TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true',
    TILL_FACILITATOR_URL: urls.facilitator,
    TILL_BASE_RPC_URL: urls.base,
    TILL_MODES: 'live',
  });

  /** `till doctor`'s check of the sandbox data in a live start's way. */
  const sandboxDataCheck = async (dataDir: string) => {
    const doctor = await runNodeScript(CLI, ['doctor', '--json'], { env: liveSettings(dataDir) });
    return (JSON.parse(doctor.stdout).checks as { name: string; status: string; detail: string; fix?: string }[]).find(
      (check) => check.name === 'no sandbox data in the way',
    );
  };

  test('an RPC whose chain id is not 8453 names TILL_BASE_RPC_URL', async () => {
    const run = await serve({ TILL_BASE_RPC_URL: urls.sepolia });
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /Invalid setting TILL_BASE_RPC_URL: live mode refused to start: RPC is Base mainnet — TILL_BASE_RPC_URL answers chain id 84532, not Base mainnet \(8453\)/,
    );
    assert.doesNotMatch(run.stdout, /Till is serving/);
  });

  test('a token whose EIP-712 domain differs from the challenge names TILL_USDC_ADDRESS', async () => {
    const run = await serve({ TILL_BASE_RPC_URL: urls.sepoliaToken });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /Invalid setting TILL_USDC_ADDRESS: .*says name "USDC", version "2"; Till's challenges say "USD Coin", "2"/);
  });

  test('an RPC that answers eth_getLogs over no block names TILL_BASE_RPC_URL: a lost settle answer could never be found', async () => {
    const run = await serve({ TILL_BASE_RPC_URL: urls.noLogs });
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /Invalid setting TILL_BASE_RPC_URL: live mode refused to start: RPC eth_getLogs range — eth_getLogs \[\d+, \d+\] at http:\/\/127\.0\.0\.1:\d+ failed: .*JSON-RPC error -32601.*Fix: use a Base RPC \(or a plan\) that answers eth_getLogs/,
    );
  });

  test('an RPC that cannot be reached names TILL_BASE_RPC_URL, never the token, and never shows its key', async () => {
    const unreachable = `http://127.0.0.1:9/v2/${RPC_KEY}`;
    const run = await serve({ TILL_BASE_RPC_URL: unreachable });
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /Invalid setting TILL_BASE_RPC_URL: live mode refused to start: RPC is Base mainnet — eth_chainId at http:\/\/127\.0\.0\.1:9\/… failed/,
    );
    assert.match(run.stderr, /Fix: check TILL_BASE_RPC_URL/);
    const doctor = await doctorWithRpc(unreachable);
    const checks = JSON.parse(doctor.stdout).checks as { name: string; status: string; detail: string; fix?: string }[];
    for (const name of ['RPC is Base mainnet', 'RPC eth_getLogs range', "token's EIP-712 domain"]) {
      const check = checks.find((check) => check.name === name)!;
      assert.equal(check.status, 'failed', name);
      assert.match(check.detail, /at http:\/\/127\.0\.0\.1:9\/… failed/, name);
      assert.match(check.fix!, /^check TILL_BASE_RPC_URL/, name);
    }
    for (const shown of [run.stdout, run.stderr, doctor.stdout, doctor.stderr]) assert.doesNotMatch(shown, new RegExp(RPC_KEY));
  });

  test("till doctor reports the RPC's eth_getLogs range: a plan of 10 blocks is searched 10 blocks at a time", async () => {
    const doctor = await doctorWithRpc(urls.tenBlockPlan);
    const check = (JSON.parse(doctor.stdout).checks as { name: string; status: string; detail: string }[]).find(
      (check) => check.name === 'RPC eth_getLogs range',
    )!;
    assert.equal(check.status, 'ok');
    assert.match(check.detail, /^10 blocks per request: the RPC refused 500, so the reconciler searches in 10-block ranges \(50 requests for 500 blocks/);
  });

  test('a facilitator that does not settle exact on Base names TILL_FACILITATOR_URL', async () => {
    const run = await serve({ TILL_FACILITATOR_URL: urls.sepoliaFacilitator });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /Invalid setting TILL_FACILITATOR_URL: .*it settles exact@eip155:84532\(v2\), not exact on eip155:8453/);
  });

  test('a facilitator that does not answer names TILL_FACILITATOR_URL', async () => {
    const run = await serve({ TILL_FACILITATOR_URL: 'http://127.0.0.1:9' });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /Invalid setting TILL_FACILITATOR_URL: .*GET http:\/\/127\.0\.0\.1:9\/supported failed/);
  });

  test('a database that served the sandbox is refused until till live prepare has archived its sandbox data', async () => {
    // The sandbox first: the demo user, and a merchant with an open session, as `npm start` leaves them.
    const dataDir = freshDir();
    const sandbox = await sandboxService(dataDir);
    try {
      const shop = await createMerchant(sandbox.context.db, { keyMode: 'test' });
      await createUser(sandbox.context.db, { merchantId: shop.merchantId, email: DEMO_USER_EMAIL, password: 'demo password 12345' });
      await createSession(sandbox, shop.apiKey, { amount: 5, currency: 'USD' });
    } finally {
      await sandbox.close();
    }
    const refused = await serve({ TILL_DATA_DIR: dataDir });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /Invalid setting TILL_DATABASE_URL: live mode refused to start: this database holds 1 payable sandbox session and the sandbox demo user\. Fix: run till live prepare with the live settings/,
    );
    const prepared = await runNodeScript(CLI, ['live', 'prepare', '--json'], { env: liveSettings(dataDir) });
    assert.equal(prepared.code, 0, prepared.stderr);
    assert.equal(JSON.parse(prepared.stdout).sessionsArchived, 1);
    assert.equal((await sandboxDataCheck(dataDir))?.status, 'ok');
  });

  test('the demo payout key and a merchant paid out to its wallet are in the way of a live start until till live prepare deletes the key and clears the wallet', async () => {
    // The sandbox's demo merchant as `till serve` makes it (its payout key in the data folder), its
    // user gone, and a merchant of the operator's with a wallet of its own.
    const dataDir = freshDir();
    const sandbox = await sandboxService(dataDir);
    let demo: { merchantId: string; wallet: string; payoutKeyFile: string };
    const ownWallet = newAccount().address;
    let own: { merchantId: string };
    try {
      const made = await createDemoMerchant(sandbox.context.db, dataDir);
      assert.ok(made);
      demo = made;
      // The demo wallet is a test wallet; as if an operator had also made it the live one, which live money must never reach.
      await sandbox.context.db.updateTable('merchants').set({ wallet_address: made.wallet }).where('id', '=', made.merchantId).execute();
      const user = await findUserByEmail(sandbox.context.db, DEMO_USER_EMAIL);
      await removeUser(sandbox.context.db, user!.id);
      own = await createMerchant(sandbox.context.db, { walletAddress: ownWallet, keyMode: 'live' });
    } finally {
      await sandbox.close();
    }
    const live = liveSettings(dataDir);
    const inTheWay = `this database holds merchant ${demo.merchantId} paid out to the sandbox demo wallet ${demo.wallet}; the data folder holds the sandbox demo payout key ${demo.payoutKeyFile}`;

    const refused = await serve({ TILL_DATA_DIR: dataDir });
    assert.equal(refused.code, 2, refused.stderr);
    assert.ok(
      refused.stderr.includes(`Invalid setting TILL_DATABASE_URL: live mode refused to start: ${inTheWay}. Fix: run till live prepare`),
      refused.stderr,
    );
    assert.doesNotMatch(refused.stdout, /Till is serving/);
    const before = await sandboxDataCheck(dataDir);
    assert.equal(before?.status, 'failed');
    assert.equal(before?.detail, inTheWay);
    assert.match(before?.fix ?? '', /^run till live prepare/);

    const prepared = await runNodeScript(CLI, ['live', 'prepare', '--json'], { env: live });
    assert.equal(prepared.code, 0, prepared.stderr);
    const done = JSON.parse(prepared.stdout);
    assert.deepEqual([done.demoPayoutKeyRemoved, done.walletsCleared], [demo.payoutKeyFile, [demo.merchantId]]);
    assert.equal(existsSync(demo.payoutKeyFile), false, 'the demo payout key is deleted');
    const database = openDatabase(loadConfig(live));
    try {
      assert.equal((await findMerchant(database.db, demo.merchantId))?.wallets.live, null, 'the demo merchant is paid out nowhere in live');
      assert.equal((await findMerchant(database.db, own.merchantId))?.wallets.live, ownWallet, "the operator's own merchant is untouched");
    } finally {
      await database.close();
    }
    assert.equal((await sandboxDataCheck(dataDir))?.status, 'ok');
  });

  test('a setting refused without the network stops the start the same way', async () => {
    const run = await serve({ TILL_BASE_RPC_URL: '' });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^till: Invalid setting TILL_BASE_RPC_URL: is required in live mode/);
  });
});
