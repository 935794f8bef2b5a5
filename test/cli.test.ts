import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { getAddress } from 'viem';
import { temporaryDirectories } from '../src/testing/environment.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');

/** A data directory of its own, as an operator's fresh install would have. */
const freshDataDir = temporaryDirectories('till-cli-');

/** Runs `till …` as an operator does, with only the settings given (no inherited TILL_*). */
function till(args: string[], env: Record<string, string>, cwd?: string) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT'));
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...clean, TILL_LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
    ...(cwd ? { cwd } : {}),
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('till merchant and keys', () => {
  const env = { TILL_DATA_DIR: freshDataDir() };

  test('merchant create prints the key id beside the key, and warns when there is no wallet', () => {
    const created = till(['merchant', 'create', '--name', 'Corner shop'], env);
    assert.equal(created.status, 0, created.stderr);
    assert.match(created.stdout, /^Merchant mer_\S+ created\.\nAPI key key_\S+ \(shown once, store it now\): sk_test_\S+\n$/);
    assert.match(created.stderr, /Warning: merchant mer_\S+ has no payout wallet.*till merchant set-wallet mer_\S+ 0xYourAddress/);
    const json = JSON.parse(till(['merchant', 'create', '--name', 'Paid shop', '--wallet', `0x${'ab'.repeat(20)}`, '--json'], env).stdout);
    assert.match(json.keyId, /^key_/);
    assert.equal(json.warning, undefined);
  });

  test('merchant set-wallet stores the address checksummed and refuses a mistyped checksum or the zero address, naming the argument', () => {
    const json = JSON.parse(till(['merchant', 'create', '--name', 'Wallets', '--json'], env).stdout);
    const lower = `0x${'cd'.repeat(20)}`;
    const set = till(['merchant', 'set-wallet', json.merchantId, lower, '--json'], env);
    assert.equal(set.status, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).walletAddress, getAddress(lower));
    const mistyped = getAddress(lower).replace(/[A-F]/, (c) => c.toLowerCase());
    const refused = till(['merchant', 'set-wallet', json.merchantId, mistyped], env);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /the address has capitals that do not match its EIP-55 checksum/);
    assert.match(till(['merchant', 'create', '--name', 'Zero', '--wallet', `0x${'0'.repeat(40)}`], env).stderr, /--wallet is the zero address/);
  });

  test('merchant set-chains stores supported chains and tokens and refuses the rest by name', () => {
    const json = JSON.parse(till(['merchant', 'create', '--name', 'Chains', '--json'], env).stdout);
    const set = till(['merchant', 'set-chains', json.merchantId, 'BASE:usdc', '--json'], env);
    assert.equal(set.status, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { merchantId: json.merchantId, acceptedChains: [{ chain: 'base', tokens: ['USDC'] }] });
    const chain = till(['merchant', 'set-chains', json.merchantId, 'solana:USDC'], env);
    assert.notEqual(chain.status, 0);
    assert.match(chain.stderr, /chain "solana" is not accepted; accepted: base/);
    const token = till(['merchant', 'set-chains', json.merchantId, 'base:USDT'], env);
    assert.notEqual(token.status, 0);
    assert.match(token.stderr, /token "USDT" is not accepted on base; accepted: USDC/);
    assert.match(till(['merchant', 'set-chains', 'mer_missing', 'base:USDC'], env).stderr, /no merchant mer_missing/);
  });

  test('merchant list shows ids, names, wallet state and key ids with their last four, never a key', () => {
    const json = JSON.parse(till(['merchant', 'create', '--name', 'Listed', '--json'], env).stdout);
    const listed = till(['merchant', 'list'], env);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(
      listed.stdout,
      new RegExp(`${json.merchantId}  Listed\\n  wallets: test not set, live not set\\n  keys: ${json.keyId} \\(sk_test_…${json.apiKey.slice(-4)}\\)`),
    );
    // Typed in lower case, shown checksummed (EIP-55) as wallets show it.
    assert.ok(listed.stdout.includes(`wallets: test ${getAddress(`0x${'ab'.repeat(20)}`)}`), listed.stdout);
    assert.match(listed.stdout, /till keys create --merchant MERCHANT_ID/);
    assert.ok(!listed.stdout.includes(json.apiKey));
    const { merchants } = JSON.parse(till(['merchant', 'list', '--json'], env).stdout);
    const entry = merchants.find((m: { id: string }) => m.id === json.merchantId);
    assert.deepEqual(
      entry.keys.map((k: { keyId: string; lastFour: string }) => [k.keyId, k.lastFour]),
      [[json.keyId, json.apiKey.slice(-4)]],
    );
    assert.deepEqual(entry.wallets, { sandbox: null, live: null });
    assert.ok(!JSON.stringify(merchants).includes(json.apiKey));
    // A lost key: a new one, then the old one revoked; the list follows.
    const replacement = JSON.parse(till(['keys', 'create', '--merchant', json.merchantId, '--json'], env).stdout);
    assert.equal(till(['keys', 'revoke', json.keyId], env).status, 0);
    const after = JSON.parse(till(['merchant', 'list', '--json'], env).stdout).merchants.find((m: { id: string }) => m.id === json.merchantId);
    assert.deepEqual(
      after.keys.map((k: { keyId: string }) => k.keyId),
      [replacement.keyId],
    );
  });
});

describe('till merchant set-webhook', () => {
  test('a loopback receiver is accepted silently in the sandbox', () => {
    const env = { TILL_DATA_DIR: freshDataDir() };
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Shop', '--json'], env).stdout);
    const result = till(['merchant', 'set-webhook', merchantId, '--url', 'http://localhost:3000/webhooks'], env);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /Webhook key \(sent as X-Webhook-Api-Key\): whk_/);
  });

  test('says at once when deliveries to the URL will be refused, and why', () => {
    const env = { TILL_DATA_DIR: freshDataDir(), TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS: 'false' };
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Shop', '--json'], env).stdout);
    const loopback = till(['merchant', 'set-webhook', merchantId, '--url', 'http://localhost:3000/webhooks'], env);
    assert.equal(loopback.status, 0);
    assert.match(
      loopback.stderr,
      /^Warning: deliveries to this URL will not be sent: refused by the SSRF guard: localhost is (127\.0\.0\.1|::1), a loopback address \(allowed by TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS/,
    );
    const privateTarget = JSON.parse(till(['merchant', 'set-webhook', merchantId, '--url', 'http://10.0.0.8/hook', '--json'], env).stdout);
    assert.match(privateTarget.warning, /10\.0\.0\.8 is 10\.0\.0\.8, a private, link-local or otherwise non-public address/);
    // Live mode: https only, and loopback refused unless the operator allows it.
    const live = {
      TILL_DATA_DIR: freshDataDir(),
      TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
      TILL_BASE_RPC_URL: 'http://127.0.0.1:9',
      TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true',
    };
    const shop = JSON.parse(till(['merchant', 'create', '--name', 'Live shop', '--json'], live).stdout);
    const refused = JSON.parse(till(['merchant', 'set-webhook', shop.merchantId, '--url', 'https://127.0.0.1/hook', '--json'], live).stdout);
    assert.match(refused.warning, /a loopback address/);
  });
});

describe('settings from .env', () => {
  test('.env in the working directory is read, and the real environment wins over it', () => {
    const project = freshDataDir();
    writeFileSync(join(project, '.env'), `# local settings\nTILL_DATA_DIR=${join(project, 'from-dotenv')}\nTILL_SESSION_TTL_SECONDS=60\n`);
    const fromFile = till(['merchant', 'create', '--name', 'Dotenv', '--json'], {}, project);
    assert.equal(fromFile.status, 0, fromFile.stderr);
    assert.ok(existsSync(join(project, 'from-dotenv', 'till.sqlite')), 'the database is where .env says');
    const elsewhere = join(project, 'from-environment');
    const fromEnvironment = till(['merchant', 'create', '--name', 'Env', '--json'], { TILL_DATA_DIR: elsewhere }, project);
    assert.equal(fromEnvironment.status, 0, fromEnvironment.stderr);
    assert.ok(existsSync(join(elsewhere, 'till.sqlite')), 'the environment wins');
    const listed = JSON.parse(till(['merchant', 'list', '--json'], {}, project).stdout);
    assert.deepEqual(
      listed.merchants.map((m: { name: string }) => m.name),
      ['Dotenv'],
    );
  });

  test('a bad value in .env stops the command with a message naming the setting', () => {
    const project = freshDataDir();
    writeFileSync(join(project, '.env'), `TILL_DATA_DIR=${join(project, 'data')}\nTILL_SESSION_TTL_SECONDS=soon\n`);
    const result = till(['merchant', 'list'], {}, project);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /Invalid setting TILL_SESSION_TTL_SECONDS/);
  });
});
