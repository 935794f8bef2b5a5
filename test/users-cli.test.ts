import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { verify } from '@node-rs/argon2';
import { totpCode, totpStep } from '../src/accounts/totp.ts';
import { beginTotpEnrolment, confirmTotp, totpState } from '../src/accounts/two-factor.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { recordToolCall } from '../src/mcp/audit.ts';
import { authenticateApiKey, createApiKey } from '../src/merchants/api-keys.ts';
import { addConsent } from '../src/oauth/grants.ts';
import { temporaryDirectories } from '../src/testing/environment.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');
const freshDataDir = temporaryDirectories('till-users-cli-');

function till(args: string[], env: Record<string, string>, input?: string) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT'));
  const result = spawnSync(process.execPath, [CLI, ...args], { env: { ...clean, TILL_LOG_LEVEL: 'silent', ...env }, encoding: 'utf8', input: input ?? '' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('till users', () => {
  const env = { TILL_DATA_DIR: freshDataDir() };
  const passwordHash = async (email: string) => {
    const database = openDatabase(loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' }));
    try {
      return (await database.db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow()).password_hash;
    } finally {
      await database.close();
    }
  };

  test('roles: create with --role, list, set-role; an unknown role names --role, and the last owner keeps the role', () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Roles shop', '--json'], env).stdout);
    const owner = till(['users', 'create', '--merchant', merchantId, '--email', 'boss@roles.example', '--json'], env);
    assert.equal(JSON.parse(owner.stdout).role, 'owner', 'an owner unless --role says otherwise');
    const dev = till(['users', 'create', '--merchant', merchantId, '--email', 'dev@roles.example', '--role', 'developer', '--json'], env);
    assert.equal(JSON.parse(dev.stdout).role, 'developer');
    const unknown = till(['users', 'create', '--merchant', merchantId, '--email', 'x@roles.example', '--role', 'superuser'], env);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /--role must be one of owner, admin, developer, viewer/);
    const lastOwner = till(['users', 'set-role', '--email', 'boss@roles.example', '--role', 'admin'], env);
    assert.equal(lastOwner.status, 2);
    assert.match(lastOwner.stderr, /the last owner cannot be removed or given another role/);
    const promoted = till(['users', 'set-role', '--email', 'dev@roles.example', '--role', 'owner', '--json'], env);
    assert.equal(promoted.status, 0, promoted.stderr);
    assert.deepEqual(JSON.parse(promoted.stdout), {
      userId: JSON.parse(dev.stdout).userId,
      email: 'dev@roles.example',
      from: 'developer',
      role: 'owner',
      changed: true,
    });
    assert.equal(till(['users', 'set-role', '--email', 'boss@roles.example', '--role', 'viewer'], env).status, 0, 'another owner now');
    const listed = JSON.parse(till(['users', 'list', '--merchant', merchantId, '--json'], env).stdout);
    assert.deepEqual(
      listed.users.map((user: { email: string; role: string }) => `${user.email} ${user.role}`),
      ['dev@roles.example owner', 'boss@roles.example viewer'],
    );
  });

  test('create takes the password on stdin and stores only its Argon2id hash; reset-password replaces it', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Users shop', '--json'], env).stdout);
    const created = till(
      ['users', 'create', '--merchant', merchantId, '--email', 'Owner@Shop.example', '--password-stdin', '--json'],
      env,
      'a long enough password\n',
    );
    assert.equal(created.status, 0, created.stderr);
    const user = JSON.parse(created.stdout);
    assert.equal(user.email, 'owner@shop.example');
    assert.equal(user.password, undefined, 'a password given is never printed');
    const hash = await passwordHash('owner@shop.example');
    assert.match(hash, /^\$argon2id\$/);
    assert.ok(await verify(hash, 'a long enough password'));

    const again = till(['users', 'create', '--merchant', merchantId, '--email', 'owner@shop.example', '--password-stdin'], env, 'a long enough password\n');
    assert.equal(again.status, 2);
    assert.match(again.stderr, /already exists/);
    const short = till(['users', 'create', '--merchant', merchantId, '--email', 'two@shop.example', '--password-stdin'], env, 'short\n');
    assert.equal(short.status, 2);
    assert.match(short.stderr, /at least 12 characters/);
    const noMerchant = till(['users', 'create', '--merchant', 'mer_nope', '--email', 'x@shop.example', '--password-stdin'], env, 'a long enough password\n');
    assert.match(noMerchant.stderr, /no merchant mer_nope/);

    const reset = till(['users', 'reset-password', '--email', 'owner@shop.example', '--password-stdin'], env, 'another long password\n');
    assert.equal(reset.status, 0, reset.stderr);
    assert.ok(await verify(await passwordHash('owner@shop.example'), 'another long password'));
    assert.match(till(['users', 'reset-password', '--email', 'nobody@shop.example', '--password-stdin'], env, 'another long password\n').stderr, /no user/);
  });

  test('without --password-stdin a password is generated and shown once', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Generated', '--json'], env).stdout);
    const created = till(['users', 'create', '--merchant', merchantId, '--email', 'gen@shop.example'], env);
    assert.equal(created.status, 0, created.stderr);
    const password = /Password \(shown once\): (\S+)/.exec(created.stdout)?.[1];
    assert.ok(password && password.length === 20);
    assert.ok(await verify(await passwordHash('gen@shop.example'), password));
  });

  test('clients create prints the secret once as JSON; clients revoke and signing-keys rotate work', () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Server shop', '--json'], env).stdout);
    const created = till(['clients', 'create', '--merchant', merchantId, '--json'], env);
    assert.equal(created.status, 0, created.stderr);
    const client = JSON.parse(created.stdout);
    assert.match(client.client_id, /^cli_[\w-]{22}$/);
    assert.match(client.client_secret, /^cs_[\w-]{43}$/);
    assert.equal(client.merchant_id, merchantId);
    assert.equal(client.mode, 'test', 'a deployment serving test mode only makes test clients');
    assert.match(
      till(['clients', 'create', '--merchant', merchantId, '--mode', 'live'], env).stderr,
      /this deployment does not serve live mode \(it serves test\)/,
    );
    assert.match(till(['clients', 'create', '--merchant', 'mer_nope'], env).stderr, /no merchant mer_nope/);
    assert.equal(till(['clients', 'revoke', client.client_id], env).status, 0);
    assert.match(till(['clients', 'revoke', client.client_id], env).stderr, /no active client/);
    const first = JSON.parse(till(['signing-keys', 'rotate', '--json'], env).stdout).kid;
    const second = JSON.parse(till(['signing-keys', 'rotate', '--json'], env).stdout).kid;
    assert.ok(first && second && first !== second);
  });

  test('grants list shows a merchant’s coding agents; grants revoke ends one', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Agent shop', '--json'], env).stdout);
    const user = JSON.parse(till(['users', 'create', '--merchant', merchantId, '--email', 'agents@shop.example', '--json'], env).stdout);
    const database = openDatabase(loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' }));
    const clientId = 'https://agent.example/client.json';
    const grant = await database.db
      .transaction()
      .execute((trx) =>
        addConsent(
          trx,
          { merchantId, userId: user.userId, clientId, clientName: 'Agent', scopes: ['settings:read', 'keys:read'], mode: 'sandbox' },
          Date.UTC(2026, 0, 2),
        ),
      )
      .finally(() => database.close());
    const listed = till(['grants', 'list', '--merchant', merchantId, '--json'], env);
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout), {
      merchant_id: merchantId,
      grants: [
        {
          grant_id: grant.id,
          client_id: clientId,
          client_name: 'Agent',
          scopes: ['settings:read', 'keys:read'],
          mode: 'test',
          created_at: '2026-01-02T00:00:00.000Z',
          last_used_at: null,
        },
      ],
    });
    assert.equal(till(['grants', 'revoke', grant.id, '--merchant', merchantId], env).status, 0);
    assert.deepEqual(JSON.parse(till(['grants', 'list', '--merchant', merchantId, '--json'], env).stdout).grants, []);
    assert.match(till(['grants', 'revoke', grant.id, '--merchant', merchantId], env).stderr, /no active grant/);
  });

  test('reset-password revokes every coding agent unless --keep-agents, and lists the API keys agents made with the old password', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Intruded shop', '--json'], env).stdout);
    const user = JSON.parse(till(['users', 'create', '--merchant', merchantId, '--email', 'intruded@shop.example', '--json'], env).stdout);
    const database = openDatabase(loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' }));
    const clientId = 'https://intruder.example/client.json';
    const { agentKey, ownKey } = await (async () => {
      const now = Date.now();
      const grant = await database.db
        .transaction()
        .execute((trx) => addConsent(trx, { merchantId, userId: user.userId, clientId, clientName: 'Intruder', scopes: ['keys:write'], mode: 'sandbox' }, now));
      // What the MCP tool create_api_key leaves: the key, then its audited call.
      const agentKey = await createApiKey(database.db, merchantId, 'test', now + 1);
      await recordToolCall(
        database.db,
        { grantId: grant.id, clientId, merchantId, mode: grant.mode, tool: 'create_api_key', outcome: 'ok', reason: null, arguments: {} },
        now + 2,
      );
      const ownKey = await createApiKey(database.db, merchantId, 'test', now + 3);
      return { agentKey, ownKey };
    })().finally(() => database.close());

    const reset = till(['users', 'reset-password', '--email', 'intruded@shop.example', '--password-stdin', '--json'], env, 'a fresh long password\n');
    assert.equal(reset.status, 0, reset.stderr);
    const answer = JSON.parse(reset.stdout);
    assert.equal(answer.agentsRevoked, 1);
    assert.deepEqual(
      answer.apiKeysMadeByAgents.map((key: { keyId: string; clientId: string; masked: string }) => [key.keyId, key.clientId, key.masked]),
      [[agentKey.keyId, clientId, `…${agentKey.lastFour}`]],
    );
    assert.ok(!reset.stdout.includes(ownKey.keyId) && !reset.stdout.includes(agentKey.apiKey));
    assert.deepEqual(JSON.parse(till(['grants', 'list', '--merchant', merchantId, '--json'], env).stdout).grants, []);

    const again = openDatabase(loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' }));
    await again.db
      .transaction()
      .execute((trx) =>
        addConsent(trx, { merchantId, userId: user.userId, clientId, clientName: 'Own agent', scopes: ['settings:read'], mode: 'sandbox' }, Date.now()),
      )
      .finally(() => again.close());
    const kept = till(['users', 'reset-password', '--email', 'intruded@shop.example', '--password-stdin', '--keep-agents'], env, 'another fresh password\n');
    assert.equal(kept.status, 0, kept.stderr);
    assert.match(kept.stdout, /Coding agents keep their access/);
    assert.doesNotMatch(kept.stdout, /API keys coding agents made/, 'the agent key was made before the previous password was set');
    assert.equal(JSON.parse(till(['grants', 'list', '--merchant', merchantId, '--json'], env).stdout).grants.length, 1);
  });

  test('reset-two-factor removes a locked-out user’s authenticator and recovery codes, and signs it out', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Locked shop', '--json'], env).stdout);
    const { userId } = JSON.parse(till(['users', 'create', '--merchant', merchantId, '--email', 'locked@shop.example', '--json'], env).stdout);
    const config = loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' });
    const database = openDatabase(config);
    try {
      const now = Date.now();
      const secret = (await beginTotpEnrolment(database.db, config.secretKey, userId, now))!;
      assert.ok(await confirmTotp(database.db, config.secretKey, userId, totpCode(secret, totpStep(now)), now));
      assert.deepEqual(await totpState(database.db, userId), { enrolled: true, recoveryCodesLeft: 10 });
      const reset = till(['users', 'reset-two-factor', '--email', 'locked@shop.example', '--json'], env);
      assert.equal(reset.status, 0, reset.stderr);
      assert.deepEqual(JSON.parse(reset.stdout), { userId, email: 'locked@shop.example', authenticatorRemoved: true, passkeysRemoved: 0 });
      assert.deepEqual(await totpState(database.db, userId), { enrolled: false, recoveryCodesLeft: 0 });
      assert.match(till(['users', 'reset-two-factor', '--email', 'nobody@shop.example'], env).stderr, /no user with email nobody@shop.example/);
    } finally {
      await database.close();
    }
  });

  test('keys create --scopes makes a restricted key; an unknown or empty scope is refused and nothing is made', async () => {
    const { merchantId } = JSON.parse(till(['merchant', 'create', '--name', 'Scoped shop', '--json'], env).stdout);
    const made = till(['keys', 'create', '--merchant', merchantId, '--scopes', 'sessions:read, sessions:write', '--json'], env);
    assert.equal(made.status, 0, made.stderr);
    const key = JSON.parse(made.stdout);
    assert.deepEqual(key.scopes, ['sessions:write', 'sessions:read']);
    const config = loadConfig({ ...env, TILL_LOG_LEVEL: 'silent' });
    const database = openDatabase(config);
    try {
      assert.deepEqual((await authenticateApiKey(database.db, key.apiKey, config.modes))?.scopes, ['sessions:write', 'sessions:read']);
      const full = JSON.parse(till(['keys', 'create', '--merchant', merchantId, '--json'], env).stdout);
      assert.equal(full.scopes, null, 'a full key by default');
      const count = async () => (await database.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute()).length;
      const before = await count();
      const unknown = till(['keys', 'create', '--merchant', merchantId, '--scopes', 'sessions:write,refunds:everything'], env);
      assert.equal(unknown.status, 2);
      assert.match(unknown.stderr, /--scopes: "refunds:everything" is not a scope; the scopes are sessions:write, sessions:read, events:read, webhooks:write/);
      assert.match(till(['keys', 'create', '--merchant', merchantId, '--scopes', ','], env).stderr, /--scopes needs one scope or more/);
      assert.equal(await count(), before);
    } finally {
      await database.close();
    }
  });
});
