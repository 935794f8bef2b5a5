// Time from spawning `npm start` (the service, which starts the sandbox chain and facilitator) on a
// warm install and a fresh data folder to both healthy: the service's /healthz answering 200 and
// the sandbox's JSON-RPC answering eth_blockNumber. Median of several runs; target ≤ 3 s. Beside it,
// the same start as `node src/cli/main.ts serve` (no npm) and the moments each part is ready,
// read from the service's own output, to show where the time goes.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/testing/environment.ts';
import { type BenchOptions, type BenchReport, childEnv, fmt, REPO_ROOT } from './support.ts';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 5);
const TARGET_MS = 3_000;
const TIMEOUT_MS = 60_000;

type Launcher = 'npm start' | 'node src/cli/main.ts serve';
type Timing = { serviceMs: number; sandboxMs: number; bothMs: number; cpu: Cpu };
/** CPU time (user + system, ms) used until both were healthy, per process of the launched group. */
type Cpu = { npm: number; service: number; sandbox: number };

const TICK_MS = 10; // USER_HZ is 100 on Linux

/**
 * CPU time of every live process in the group: on a machine shared with other jobs the wall time
 * of a start mostly measures the others, while the CPU it used is its own cost.
 */
function groupCpu(group: number): Cpu {
  const cpu: Cpu = { npm: 0, service: 0, sandbox: 0 };
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== group) continue;
      const used = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (command.includes('sandbox/process.ts')) cpu.sandbox += used;
      else if (command.includes('src/cli/main.ts')) cpu.service += used;
      else cpu.npm += used;
    } catch {
      // The process ended meanwhile.
    }
  }
  return cpu;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function answers(url: string, init?: RequestInit): Promise<boolean> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(1_000) });
    const body = await response.text();
    return response.ok && (init?.body === undefined || body.includes('"result"'));
  } catch {
    return false;
  }
}

/** Stops the launched process group (npm and the service under it, and the sandbox under that). */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  process.kill(-child.pid!, 'SIGTERM');
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  }, 5_000);
  await exited;
  clearTimeout(timer);
}

/** One start on a fresh data folder and fresh ports: the time to each part healthy. */
async function startOnce(launcher: Launcher): Promise<Timing> {
  const dataDir = mkdtempSync(join(tmpdir(), 'till-bench-start-'));
  const [port, sandboxPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const env = childEnv({ PORT: String(port), TILL_BASE_URL: base, TILL_DATA_DIR: dataDir, TILL_SANDBOX_PORT: String(sandboxPort), TILL_LOG_LEVEL: 'warn' });
  const rpc = {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
  };
  const started = performance.now();
  const [command, args] = launcher === 'npm start' ? ['npm', ['start', '--silent']] : [process.execPath, ['src/cli/main.ts', 'serve']];
  const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let serviceMs: number | undefined;
  let sandboxMs: number | undefined;
  try {
    while (serviceMs === undefined || sandboxMs === undefined) {
      if (child.exitCode !== null) throw new Error(`${launcher} exited with ${child.exitCode}:\n${output}`);
      if (performance.now() - started > TIMEOUT_MS) throw new Error(`${launcher} not healthy within ${TIMEOUT_MS} ms:\n${output}`);
      const [service, sandbox] = await Promise.all([
        serviceMs === undefined && answers(`${base}/healthz`),
        sandboxMs === undefined && answers(`http://127.0.0.1:${sandboxPort}/rpc`, rpc),
      ]);
      const now = performance.now() - started;
      if (service) serviceMs = now;
      if (sandbox) sandboxMs = now;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { serviceMs, sandboxMs, bothMs: Math.max(serviceMs, sandboxMs), cpu: groupCpu(child.pid!) };
  } finally {
    await stopGroup(child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** How long Node takes to load the service's modules and nothing else, as a floor under the start. */
async function moduleLoadMs(): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', "await import('./src/main.ts'); await import('./src/cli/serve.ts');"], {
    cwd: REPO_ROOT,
    env: childEnv({}),
    stdio: 'ignore',
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`loading the modules exited with ${code}`);
  return performance.now() - started;
}

export async function run(_options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const timings: Record<Launcher, Timing[]> = { 'npm start': [], 'node src/cli/main.ts serve': [] };
  const loads: number[] = [];
  // Alternated, so a noisy machine's drift falls on both.
  for (let i = 0; i < RUNS; i++) {
    for (const launcher of Object.keys(timings) as Launcher[]) {
      const timing = await startOnce(launcher);
      log(
        `  ${launcher.padEnd(27)} service ${fmt(timing.serviceMs).padStart(5)} ms  sandbox RPC ${fmt(timing.sandboxMs).padStart(5)} ms  both ${fmt(timing.bothMs).padStart(5)} ms  CPU: npm and esbuild ${timing.cpu.npm} ms, service ${timing.cpu.service} ms, sandbox ${timing.cpu.sandbox} ms`,
      );
      timings[launcher].push(timing);
    }
    loads.push(await moduleLoadMs());
  }
  const medians = (launcher: Launcher) => ({
    service: median(timings[launcher].map((t) => t.serviceMs)),
    sandbox: median(timings[launcher].map((t) => t.sandboxMs)),
    both: median(timings[launcher].map((t) => t.bothMs)),
    range: [Math.min(...timings[launcher].map((t) => t.bothMs)), Math.max(...timings[launcher].map((t) => t.bothMs))],
    cpu: {
      npm: median(timings[launcher].map((t) => t.cpu.npm)),
      service: median(timings[launcher].map((t) => t.cpu.service)),
      sandbox: median(timings[launcher].map((t) => t.cpu.sandbox)),
    },
  });
  const npm = medians('npm start');
  const node = medians('node src/cli/main.ts serve');
  const load = median(loads);
  const verdict = npm.both <= TARGET_MS ? `meets the ${TARGET_MS / 1000} s target` : `ABOVE the ${TARGET_MS / 1000} s target`;
  const row = (launcher: string, m: typeof npm, bold: boolean) =>
    `| ${launcher} | ${fmt(m.service)} | ${fmt(m.sandbox)} | ${bold ? `**${fmt(m.both)}**` : fmt(m.both)} | ${fmt(m.range[0]!)}–${fmt(m.range[1]!)} | ${fmt(m.cpu.npm)} | ${fmt(m.cpu.service)} | ${fmt(m.cpu.sandbox)} |`;
  const markdown = [
    `Measured ${new Date().toISOString().slice(0, 10)} on a shared 2-core machine busy with other jobs: ${RUNS} starts of each, alternated, each on a fresh data folder (SQLite, sandbox mode, a new chain) and fresh ports; medians in ms from the spawn, and the CPU time (user + system) each process of the start had used when both were healthy. Target: both healthy ≤ ${TARGET_MS} ms.`,
    '',
    '| Launched as | service `/healthz` 200 | sandbox RPC answers | both healthy | range of both | CPU: npm, esbuild | CPU: service | CPU: sandbox |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    row('`npm start`', npm, true),
    row('`node src/cli/main.ts serve`', node, false),
    '',
    `Loading the service's modules alone (\`node -e "import('./src/main.ts')"\`, process start to exit): ${fmt(load)} ms (median).`,
  ].join('\n');
  return {
    name: 'start',
    summary: `start: npm start to service and sandbox healthy, median ${fmt(npm.both)} ms (${fmt(npm.range[0]!)}–${fmt(npm.range[1]!)}) → ${verdict}; node directly ${fmt(node.both)} ms; module load alone ${fmt(load)} ms`,
    markdown,
  };
}
