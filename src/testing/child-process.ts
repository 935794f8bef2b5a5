import { type ChildProcess, spawn } from 'node:child_process';

export type ScriptRun = { code: number | null; stdout: string; stderr: string };

/**
 * Runs a Node script in a child process and collects its output. Asynchronous (never spawnSync):
 * the service the script talks to usually runs in the test's own process.
 */
export function runNodeScript(script: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ScriptRun> {
  return runProgram(process.execPath, [script, ...args], options);
}

/** A command line run by the shell, exactly as a developer would paste it, and its output. */
export function runShellCommand(command: string, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ScriptRun> {
  return runProgram('/bin/sh', ['-c', command], options);
}

function runProgram(program: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 120_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A `till serve` in a process of its own: what it printed so far, its JSON log lines, and a stop. */
export type ServingProcess = {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Its log lines (pino JSON on stdout), parsed. */
  logLines(): Record<string, unknown>[];
  stop(): Promise<void>;
};

/** Starts `till serve` (the CLI at `cli`) with `env`, resolved once it says it is serving (60 s at most). */
export function serveTill(cli: string, env: NodeJS.ProcessEnv): Promise<ServingProcess> {
  const child = spawn(process.execPath, [cli, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const serving: ServingProcess = {
    child,
    stdout: '',
    stderr: '',
    logLines: () =>
      serving.stdout.split('\n').flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`till serve not ready in 60 s: ${serving.stderr}`)), 60_000);
    child.stdout!.on('data', (chunk) => {
      serving.stdout += chunk;
      if (serving.stdout.includes('Till is serving')) {
        clearTimeout(timer);
        resolve(serving);
      }
    });
    child.stderr!.on('data', (chunk) => {
      serving.stderr += chunk;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`till serve exited with ${code}: ${serving.stderr}`));
    });
  });
}
