import { keyModeOf, type Mode, modeLabel, modeOfKey } from '../common/modes.ts';
import type { Config } from '../config.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { createClient, revokeClient } from '../oauth/clients.ts';
import { rotateSigningKey } from '../oauth/signing-keys.ts';
import { CHECKOUT_TOKEN_SECONDS } from '../oauth/tokens.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

/**
 * The mode of a new client: `--mode test|live`, one the deployment serves; without it, the one mode
 * a deployment serving one mode serves. A deployment serving both asks: a client made in the wrong
 * mode would act on the wrong data.
 */
export function clientMode(given: string | undefined, config: Pick<Config, 'modes'>): Mode {
  const served = config.modes.map((mode) => keyModeOf(mode)).join(' or ');
  if (given === undefined) {
    if (config.modes.length === 1) return config.modes[0]!;
    throw new UsageError(`clients create needs --mode ${served}: this deployment serves both, and a client acts in one only`);
  }
  if (given !== 'test' && given !== 'live') throw new UsageError(`--mode must be test or live, not ${given}`);
  const mode = modeOfKey(given);
  if (!config.modes.includes(mode)) throw new UsageError(`this deployment does not serve ${modeLabel(mode)} mode (it serves ${served})`);
  return mode;
}

export async function clientsCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub === 'create') {
    const merchantId = takeOption(args, '--merchant');
    const givenMode = takeOption(args, '--mode');
    noneLeft(args);
    if (!merchantId) throw new UsageError('clients create needs --merchant MERCHANT_ID');
    const client = await withDatabase(async ({ db }, config) => {
      const mode = clientMode(givenMode, config);
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
