import { API_KEY_SCOPE_NAMES, type ApiKeyScope, parseApiKeyScopes } from '../common/api-key-scopes.ts';
import { TillError } from '../common/errors.ts';
import { keyModeOf } from '../common/modes.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { queueWalletChanged } from '../mail/notices.ts';
import { createApiKey, revokeApiKey } from '../merchants/api-keys.ts';
import { changeWallet, OPERATOR } from '../merchants/events.ts';
import { checkPayoutAddress, createMerchant, findMerchant, listMerchants, noWalletWarning, setAcceptedChains } from '../merchants/merchants.ts';
import { modeOption } from './mode-option.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { setWebhookCommand } from './webhooks.ts';
import { withDatabase } from './with-database.ts';

/** The address checksummed (EIP-55), as it is stored and shown; a usage error naming the argument otherwise. */
function wallet(value: string | undefined, argument = '--wallet'): string | undefined {
  if (value === undefined) return undefined;
  const checked = checkPayoutAddress(value);
  if ('problem' in checked) throw new UsageError(`${argument} ${checked.problem}, got ${JSON.stringify(value)}`);
  return checked.address;
}

export async function migrateCommand(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  noneLeft(args);
  const applied = await withDatabase((database, config) => migrateToLatest(database.db, { secretKey: config.secretKey }));
  printResult(json, { applied }, applied.length ? `Applied migrations: ${applied.join(', ')}` : 'The database is up to date.');
}

export async function merchantCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub === 'set-webhook') return setWebhookCommand(args);
  const json = takeFlag(args, '--json');
  if (sub === 'create') {
    const name = takeOption(args, '--name');
    const walletAddress = wallet(takeOption(args, '--wallet'));
    noneLeft(args);
    if (!name) throw new UsageError('merchant create needs --name NAME');
    const result = await withDatabase(async ({ db }, config) => {
      // The deployment's main mode: its key, and its payout wallet.
      const mode = modeOption(undefined, config);
      const merchant = await createMerchant(db, { name, wallets: { [mode]: walletAddress } });
      const key = await createApiKey(db, merchant.id, keyModeOf(mode));
      return { merchantId: merchant.id, apiKey: key.apiKey, keyId: key.keyId, ...(walletAddress ? {} : { warning: noWalletWarning(merchant.id) }) };
    });
    if (result.warning && !json) process.stderr.write(`Warning: ${result.warning}\n`);
    printResult(json, result, `Merchant ${result.merchantId} created.\nAPI key ${result.keyId} (shown once, store it now): ${result.apiKey}`);
    return;
  }
  if (sub === 'list') {
    noneLeft(args);
    const merchants = await withDatabase(({ db }) => listMerchants(db));
    const lines = merchants.map((m) => {
      const keys = m.keys.length ? m.keys.map((k) => `${k.keyId} (sk_${k.mode}_…${k.lastFour})`).join(', ') : 'no active key';
      return `${m.id}  ${m.name}\n  wallets: test ${m.wallets.sandbox ?? 'not set'}, live ${m.wallets.live ?? 'not set'}\n  keys: ${keys}`;
    });
    printResult(
      json,
      { merchants },
      lines.length
        ? `${lines.join('\n')}\n\nA lost key cannot be shown again: make a new one with till keys create --merchant MERCHANT_ID, then revoke the old one with till keys revoke KEY_ID.`
        : 'No merchants yet: create one with till merchant create --name NAME',
    );
    return;
  }
  if (sub === 'set-chains') {
    const [merchantId, ...specs] = args.splice(0);
    if (!merchantId || specs.length === 0) throw new UsageError('merchant set-chains needs MERCHANT_ID CHAIN:TOKEN[,TOKEN…] … (today: base:USDC)');
    const chains = specs.map((spec) => {
      const [chain = '', tokens = ''] = spec.split(':');
      return { chain, tokens: tokens.split(',').filter((token) => token !== '') };
    });
    const accepted = await withDatabase(async ({ db }) => {
      try {
        if (!(await setAcceptedChains(db, merchantId, chains))) throw new UsageError(`no merchant ${merchantId}`);
      } catch (error) {
        if (error instanceof TillError) throw new UsageError(error.message);
        throw error;
      }
      return (await findMerchant(db, merchantId))!.acceptedChains;
    });
    printResult(
      json,
      { merchantId, acceptedChains: accepted },
      `${merchantId} accepts ${accepted.map((c) => `${c.tokens.join(', ')} on ${c.chain}`).join('; ')}.`,
    );
    return;
  }
  if (sub === 'set-wallet') {
    const givenMode = takeOption(args, '--mode');
    const [merchantId, typed] = args.splice(0, 2);
    noneLeft(args);
    if (!merchantId || !typed) throw new UsageError('merchant set-wallet needs MERCHANT_ID 0xADDRESS');
    const address = wallet(typed, 'the address')!;
    await withDatabase(async ({ db }, config) => {
      const mode = modeOption(givenMode, config);
      const merchant = await findMerchant(db, merchantId);
      if (!merchant) throw new UsageError(`no merchant ${merchantId}`);
      const now = Date.now();
      // The change and the mail that tells the merchant's users of it commit together, as on the dashboard.
      await db.transaction().execute(async (trx) => {
        await changeWallet(trx, { merchantId, actor: OPERATOR, mode, walletAddress: address }, now);
        await queueWalletChanged(trx, merchantId, { wallet: address, previous: merchant.wallets[mode] }, mode, now);
      });
    });
    printResult(json, { merchantId, walletAddress: address }, `Payout wallet of ${merchantId} set to ${address}.`);
    return;
  }
  throw new UsageError(
    'merchant commands: create --name NAME [--wallet 0x…] [--json] | list [--json] | set-wallet MERCHANT_ID 0x… [--mode test|live] [--json] | set-chains MERCHANT_ID CHAIN:TOKEN[,TOKEN…]… [--json] | set-webhook MERCHANT_ID --url URL [--json]',
  );
}

export async function keysCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub === 'create') {
    const merchantId = takeOption(args, '--merchant');
    const givenMode = takeOption(args, '--mode');
    const givenScopes = takeOption(args, '--scopes');
    noneLeft(args);
    if (!merchantId) throw new UsageError('keys create needs --merchant MERCHANT_ID');
    const scopes = scopesOption(givenScopes);
    const key = await withDatabase(async ({ db }, config) => {
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return createApiKey(db, merchantId, keyModeOf(modeOption(givenMode, config)), Date.now(), scopes);
    });
    const access = key.scopes ? `restricted to ${key.scopes.join(', ')}` : 'full access';
    printResult(
      json,
      { keyId: key.keyId, apiKey: key.apiKey, scopes: key.scopes ?? null },
      `API key ${key.keyId}, ${access} (shown once, store it now): ${key.apiKey}`,
    );
    return;
  }
  if (sub === 'revoke') {
    const [keyId] = args.splice(0, 1);
    noneLeft(args);
    if (!keyId) throw new UsageError('keys revoke needs KEY_ID');
    const revoked = await withDatabase(({ db }) => revokeApiKey(db, keyId));
    if (!revoked) throw new UsageError(`no active key ${keyId}`);
    printResult(json, { keyId, revoked: true }, `API key ${keyId} revoked.`);
    return;
  }
  throw new UsageError('keys commands: create --merchant MERCHANT_ID [--mode test|live] [--scopes a,b] [--json] | revoke KEY_ID [--json]');
}

/** `--scopes a,b`: a restricted key's scopes, each known; absent, a full key. */
function scopesOption(given: string | undefined): ApiKeyScope[] | undefined {
  if (given === undefined) return undefined;
  const parsed = parseApiKeyScopes(given.split(','));
  const known = API_KEY_SCOPE_NAMES.join(', ');
  if ('unknown' in parsed) throw new UsageError(`--scopes: "${parsed.unknown}" is not a scope; the scopes are ${known}`);
  if (parsed.scopes.length === 0) throw new UsageError(`--scopes needs one scope or more, comma-separated: ${known}`);
  return parsed.scopes;
}
