import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { SandboxReadyEvent } from './process.ts';

export type SpawnedSandbox = SandboxReadyEvent & {
  child: ChildProcess;
  /** SIGTERM, then waits for the process to exit. */
  stop(): Promise<void>;
};

const PROCESS_ENTRY = fileURLToPath(new URL('process.ts', import.meta.url));

/** Starts the sandbox as a separate process and resolves once it prints its ready line. */
export function spawnSandbox(
  options: {
    port?: number;
    host?: string;
    faultControls?: boolean;
    dataDir?: string;
    /** Where the token is placed (default SANDBOX_USDC_ADDRESS), e.g. Base's USDC address. */
    tokenAddress?: string;
    readyTimeoutMs?: number;
  } = {},
): Promise<SpawnedSandbox> {
  const args = [PROCESS_ENTRY, '--port', String(options.port ?? 0)];
  if (options.host) args.push('--host', options.host);
  if (options.faultControls) args.push('--fault-controls');
  if (options.dataDir) args.push('--data-dir', options.dataDir);
  if (options.tokenAddress) args.push('--token-address', options.tokenAddress);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4_000);
  });

  return new Promise<SpawnedSandbox>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sandbox not ready within ${options.readyTimeoutMs ?? 30_000} ms: ${stderr}`));
    }, options.readyTimeoutMs ?? 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sandbox exited with code ${code} before it was ready: ${stderr}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let event: SandboxReadyEvent;
      try {
        event = JSON.parse(line) as SandboxReadyEvent;
      } catch {
        return;
      }
      if (event.event !== 'sandbox.ready') return;
      clearTimeout(timer);
      resolve({
        ...event,
        child,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}
