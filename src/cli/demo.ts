import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';

/** The sandbox demo merchant's user; `till users reset-password --email demo@till.localhost` if its password is lost. */
export const DEMO_USER_EMAIL = 'demo@till.localhost';

/** In the data folder of a sandbox only: the private key of the demo merchant's payout wallet (mode 0600). */
export const SANDBOX_PAYOUT_KEY_FILE = 'sandbox-demo-payout.key';

/**
 * The demo payout key of a data folder, when it is there: its file, and the wallet it signs for
 * (undefined when the file does not hold a key). A live service must have neither: the key sits on
 * the server's disk in the clear.
 */
export function demoPayoutKey(dataDir: string): { file: string; wallet: string | undefined } | undefined {
  const file = join(dataDir, SANDBOX_PAYOUT_KEY_FILE);
  if (!existsSync(file)) return undefined;
  try {
    return { file, wallet: privateKeyToAccount(readFileSync(file, 'utf8').trim() as `0x${string}`).address };
  } catch {
    return { file, wallet: undefined };
  }
}
