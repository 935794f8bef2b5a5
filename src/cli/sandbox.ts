import { loadConfig, type Config } from '../config.ts';
import { fundViaHttp } from '../sandbox/index.ts';
import { runSandboxProcess } from '../sandbox/process.ts';
import { spawnSandbox, type SpawnedSandbox } from '../sandbox/spawn.ts';
import { UsageError, noneLeft, printResult, takeFlag, takeOption } from './output.ts';

function localSandboxUrl(config: Config): string {
  return config.sandboxUrl ?? `http://127.0.0.1:${config.sandboxPort}`;
}

export async function sandboxCommand(args: string[]): Promise<void> {
  if (args[0] === 'fund') {
    args.shift();
    const json = takeFlag(args, '--json');
    const address = takeOption(args, '--address');
    const usdc = takeOption(args, '--usdc');
    noneLeft(args);
    if (!address || !usdc) throw new UsageError('sandbox fund needs --address 0x… --usdc AMOUNT');
    const config = loadConfig();
    if (config.mode !== 'sandbox') throw new UsageError('sandbox fund works only in the sandbox (no real facilitator configured)');
    const result = await fundViaHttp(localSandboxUrl(config), address, usdc);
    printResult(json, result, `Minted ${result.usdc} test USDC (fake money) to ${result.address}; balance ${result.balance} USDC. Transaction ${result.txHash}`);
    return;
  }
  const config = loadConfig();
  await runSandboxProcess(args.includes('--port') ? args : ['--port', String(config.sandboxPort), ...args]);
}

export type SandboxEndpoints = { url: string; rpcUrl: string; facilitatorUrl: string; usdcAddress: string; spawned: SpawnedSandbox | undefined };

/**
 * The sandbox `npm start` pays through: one already answering on TILL_SANDBOX_PORT (a service
 * killed hard leaves its sandbox running, and the chain must survive that), else a new child process.
 */
export async function ensureSandbox(config: Config): Promise<SandboxEndpoints> {
  const url = localSandboxUrl(config);
  try {
    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
    if (health.ok) {
      const body = (await health.json()) as { usdcAddress?: string };
      if (body.usdcAddress) return { url, rpcUrl: `${url}/rpc`, facilitatorUrl: `${url}/facilitator`, usdcAddress: body.usdcAddress, spawned: undefined };
    }
  } catch {
    // Nothing there: start one.
  }
  const spawned = await spawnSandbox({ port: config.sandboxPort });
  return { url: spawned.url, rpcUrl: spawned.rpcUrl, facilitatorUrl: spawned.facilitatorUrl, usdcAddress: spawned.usdcAddress, spawned };
}
