import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';

/** In the data folder of a sandbox only: the private key of the demo merchant's payout wallet (mode 0600). */
export const SANDBOX_PAYOUT_KEY_FILE = 'sandbox-demo-payout.key';

/**
 * The demo payout key of a data folder, when it is there: its file, the key and the wallet it signs
 * for (both undefined when the file does not hold a key). A live service must have neither: the key
 * sits on the server's disk in the clear, and signs for test money only.
 */
export function demoPayoutKey(dataDir: string): { file: string; key: `0x${string}` | undefined; wallet: string | undefined } | undefined {
  const file = join(dataDir, SANDBOX_PAYOUT_KEY_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const key = readFileSync(file, 'utf8').trim() as `0x${string}`;
    return { file, key, wallet: privateKeyToAccount(key).address };
  } catch {
    return { file, key: undefined, wallet: undefined };
  }
}
