import { keyModeOf } from '../common/modes.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { createClient, revokeClient } from '../oauth/clients.ts';
import { rotateSigningKey } from '../oauth/signing-keys.ts';
import { CHECKOUT_TOKEN_SECONDS } from '../oauth/tokens.ts';
import { modeOption } from './mode-option.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

export async function clientsCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub === 'create') {
    const merchantId = takeOption(args, '--merchant');
    const givenMode = takeOption(args, '--mode');
    noneLeft(args);
    if (!merchantId) throw new UsageError('clients create needs --merchant MERCHANT_ID');
    const client = await withDatabase(async ({ db }, config) => {
      const mode = modeOption(givenMode, config, 'clients create');
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return createClient(db, merchantId, mode);
    });
    const mode = keyModeOf(client.mode);
    printResult(
      json,
      { client_id: client.clientId, client_secret: client.clientSecret, merchant_id: merchantId, mode },
      `Client ${client.clientId} created for merchant ${merchantId}, in ${mode} mode: its tokens act on ${mode} data only.\nClient secret (shown once, store it now): ${client.clientSecret}`,
    );
    return;
  }
  if (sub === 'revoke') {
    const [clientId] = args.splice(0, 1);
    noneLeft(args);
    if (!clientId) throw new UsageError('clients revoke needs CLIENT_ID');
    const revoked = await withDatabase(({ db }) => revokeClient(db, clientId));
    if (!revoked) throw new UsageError(`no active client ${clientId}`);
    printResult(json, { client_id: clientId, revoked: true }, `Client ${clientId} revoked; its tokens stop working at once.`);
    return;
  }
  throw new UsageError('clients commands: create --merchant MERCHANT_ID [--mode test|live] [--json] | revoke CLIENT_ID [--json]');
}

export async function signingKeysCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  noneLeft(args);
  if (sub !== 'rotate') throw new UsageError('signing-keys commands: rotate [--json]');
  // Old keys stay published as long as the longest-lived token they signed.
  const kid = await withDatabase(({ db }, config) => rotateSigningKey(db, config.secretKey, CHECKOUT_TOKEN_SECONDS * 1000));
  printResult(json, { kid }, `New signing key ${kid}; the previous ones stay published until their tokens expire.`);
}
