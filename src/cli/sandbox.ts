import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { type SpawnedSandbox, spawnSandbox } from '../sandbox/spawn.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';

function localSandboxUrl(config: Config): string {
  return config.sandboxUrl ?? `http://127.0.0.1:${config.sandboxPort}`;
}

/** Whether a sandbox answers at this URL now. */
async function answering(url: string): Promise<{ usdcAddress?: string } | undefined> {
  try {
    // A shared sandbox may be another machine's, busy with its chain: a few seconds before it counts as absent.
    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) });
    return health.ok ? ((await health.json()) as { usdcAddress?: string }) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The chain, its contracts and the facilitator are loaded only by the commands that run or reach
 * them: `till serve` spawns the sandbox as a process of its own, and loading all that in the
 * service's process as well took about a second of every start.
 */
const sandboxModule = () => import('../sandbox/index.ts');

export async function sandboxCommand(args: string[]): Promise<void> {
  if (args[0] === 'reset') {
    args.shift();
    const json = takeFlag(args, '--json');
    noneLeft(args);
    const config = loadConfig();
    const url = localSandboxUrl(config);
    if (await answering(url))
      throw new UsageError(`a sandbox is running at ${url}; stop it (stop npm start, or the till sandbox process) and run till sandbox reset again`);
    const journal = join(config.dataDir, (await sandboxModule()).SANDBOX_JOURNAL_FILE);
    const existed = existsSync(journal);
    rmSync(journal, { force: true });
    printResult(
      json,
      { reset: true, journal, existed },
      existed
        ? `Sandbox chain reset: the next start begins with an empty chain (${journal} removed). Receipts of earlier sandbox payments now link to transactions that no longer exist.`
        : `The sandbox chain is already empty (no ${journal}).`,
    );
    return;
  }
  if (args[0] === 'fund') {
    args.shift();
    const json = takeFlag(args, '--json');
    const address = takeOption(args, '--address');
    const usdc = takeOption(args, '--usdc');
    noneLeft(args);
    if (!address || !usdc) throw new UsageError('sandbox fund needs --address 0x… --usdc AMOUNT');
    const config = loadConfig();
    if (!config.modes.includes('sandbox')) throw new UsageError('sandbox fund needs test mode, which this deployment does not serve (TILL_MODES)');
    const result = await (await sandboxModule()).fundViaHttp(localSandboxUrl(config), address, usdc);
    printResult(
      json,
      result,
      `Minted ${result.usdc} test USDC (fake money) to ${result.address}; balance ${result.balance} USDC. Transaction ${result.txHash}`,
    );
    return;
  }
  const config = loadConfig();
  const defaults = [
    ...(args.includes('--port') ? [] : ['--port', String(config.sandboxPort)]),
    ...(args.includes('--data-dir') ? [] : ['--data-dir', config.dataDir]),
  ];
  const { runSandboxProcess } = await import('../sandbox/process.ts');
  await runSandboxProcess([...defaults, ...args]);
}

export type SandboxEndpoints = { url: string; rpcUrl: string; facilitatorUrl: string; usdcAddress: string; spawned: SpawnedSandbox | undefined };

/**
 * The sandbox `npm start` pays through: one already answering on TILL_SANDBOX_PORT (a service
 * killed hard leaves its sandbox running, and the chain must survive that), else a new child process.
 */
export async function ensureSandbox(config: Config): Promise<SandboxEndpoints> {
  const url = localSandboxUrl(config);
  const running = await answering(url);
  if (running?.usdcAddress) return { url, rpcUrl: `${url}/rpc`, facilitatorUrl: `${url}/facilitator`, usdcAddress: running.usdcAddress, spawned: undefined };
  // A shared sandbox is another service's to run: its absence is reported, not replaced by a chain of this instance's own.
  if (config.mode === 'live' && config.sandboxUrl)
    throw new ConfigError('TILL_SANDBOX_URL', `no sandbox answers at ${config.sandboxUrl}/healthz: start \`till sandbox\` there, or correct the URL`);
  // Nothing there: start one, keeping its chain in the data folder so old receipts stay valid.
  const spawned = await spawnSandbox({ port: config.sandboxPort, dataDir: config.dataDir, readyTimeoutMs: 120_000 });
  return { url: spawned.url, rpcUrl: spawned.rpcUrl, facilitatorUrl: spawned.facilitatorUrl, usdcAddress: spawned.usdcAddress, spawned };
}
