// The sandbox as its own process: `node src/sandbox/process.ts [--port N] [--host H] [--fault-controls] [--data-dir DIR] [--token-address 0x…]`.
// Prints one JSON line `{"event":"sandbox.ready",...}` on stdout once it serves, and stops on SIGTERM/SIGINT.
import { parseArgs } from 'node:util';
import { getAddress, isAddress } from 'viem';
import { startSandbox } from './index.ts';

export type SandboxReadyEvent = {
  event: 'sandbox.ready';
  url: string;
  rpcUrl: string;
  facilitatorUrl: string;
  usdcAddress: string;
  chainId: number;
  network: string;
  faultControls: boolean;
  /** Transactions replayed from the journal at start, when the chain is kept in a data folder. */
  restored?: { transactions: number; failed: number };
};

/**
 * Options from argv, falling back to TILL_SANDBOX_PORT, TILL_SANDBOX_HOST and TILL_SANDBOX_FAULT_CONTROLS=1.
 * `--data-dir DIR` keeps the chain across restarts; without it the chain lives in memory.
 * `--token-address 0x…` puts the token there instead of SANDBOX_USDC_ADDRESS (e.g. Base's USDC address).
 */
export function sandboxProcessOptions(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'fault-controls': { type: 'boolean' },
      'data-dir': { type: 'string' },
      'token-address': { type: 'string' },
    },
    strict: true,
  });
  const portText = values.port ?? env.TILL_SANDBOX_PORT ?? '0';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`invalid sandbox port: ${portText}`);
  const tokenAddress = values['token-address'];
  if (tokenAddress !== undefined && !isAddress(tokenAddress, { strict: false })) throw new Error(`invalid sandbox token address: ${tokenAddress}`);
  return {
    port,
    host: values.host ?? env.TILL_SANDBOX_HOST ?? '127.0.0.1',
    faultControls: values['fault-controls'] ?? env.TILL_SANDBOX_FAULT_CONTROLS === '1',
    blockIntervalMs: BASE_BLOCK_INTERVAL_MS,
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(tokenAddress ? { tokenAddress: getAddress(tokenAddress) } : {}),
  };
}

/** Base produces a block every 2 seconds. */
const BASE_BLOCK_INTERVAL_MS = 2000;

export async function runSandboxProcess(args: string[]): Promise<void> {
  const options = sandboxProcessOptions(args);
  const sandbox = await startSandbox(options);
  const ready: SandboxReadyEvent = {
    event: 'sandbox.ready',
    url: sandbox.url,
    rpcUrl: sandbox.rpcUrl,
    facilitatorUrl: sandbox.facilitatorUrl,
    usdcAddress: sandbox.usdcAddress,
    chainId: sandbox.chainId,
    network: sandbox.network,
    faultControls: options.faultControls,
    ...(sandbox.restored ? { restored: sandbox.restored } : {}),
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  const shutdown = () => {
    sandbox.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (import.meta.main) {
  runSandboxProcess(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${JSON.stringify({ event: 'sandbox.failed', message: String(error) })}\n`);
    process.exit(1);
  });
}
