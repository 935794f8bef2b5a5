// The flake hunt: runs each given test file many times, each run in a process of its own as `npm test`
// runs it, and reports failures per file. Both engines when TILL_TEST_POSTGRES_URL is set (the files
// run their PostgreSQL suites themselves).
//
//   npm run test:repeat -- src/web/dashboard/refund.browser.test.ts test/refunds.test.ts --times 20 [--concurrency 2]
//
// Runs go round the files in turn (file 1 run 1, file 2 run 1, …) so a slow spell of the machine is
// shared out. A failed run's whole output is kept under artifacts/test-repeat/. Exits 1 on any failure.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

type Options = { files: string[]; times: number; concurrency: number };

function parseArguments(args: string[]): Options {
  const files: string[] = [];
  let times = 20;
  let concurrency = 1;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--times' || arg === '--concurrency') {
      const value = Number(args[++i]);
      if (!Number.isInteger(value) || value < 1) fail(`${arg} takes a whole number of at least 1, not ${args[i] ?? 'nothing'}`);
      if (arg === '--times') times = value;
      else concurrency = value;
    } else if (arg.startsWith('--')) fail(`unknown option ${arg} (options: --times N, --concurrency N)`);
    else files.push(arg);
  }
  if (files.length === 0) fail('name the test files to repeat, e.g. npm run test:repeat -- test/refunds.test.ts --times 20');
  return { files, times, concurrency };
}

function fail(message: string): never {
  process.stderr.write(`test:repeat: ${message}\n`);
  process.exit(2);
}

type Run = { file: string; index: number; ok: boolean; seconds: number; failed: string[] };

/** One run of one file, as npm test runs it: its own process, passwords hashed as in the suite. */
function runOnce(file: string, index: number, logs: string): Promise<Run> {
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', './src/testing/password-hash-cost.ts', '--test', '--test-timeout=600000', file], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('close', (code) => {
      const ok = code === 0;
      // The spec reporter lists the failing tests again after "✖ failing tests:".
      const failing = output.split('✖ failing tests:')[1] ?? '';
      const failed = [...new Set([...failing.matchAll(/^✖ (.+?)(?: \(\d[\d.]*ms\))?$/gm)].map((m) => m[1]!))];
      if (!ok) writeFileSync(join(logs, `${file.replaceAll('/', '_')}.run${index}.log`), output);
      done({ file, index, ok, seconds: (Date.now() - started) / 1000, failed: ok ? [] : failed.length ? failed : [`exit code ${code}`] });
    });
  });
}

async function main(): Promise<void> {
  const { files, times, concurrency } = parseArguments(process.argv.slice(2));
  if (!process.env.TILL_TEST_POSTGRES_URL)
    process.stdout.write('NOTICE: TILL_TEST_POSTGRES_URL is not set — the PostgreSQL suites are skipped; only SQLite repeats.\n');
  const logs = resolve(process.env.TILL_TEST_ARTIFACTS ?? 'artifacts', 'test-repeat');
  mkdirSync(logs, { recursive: true });
  const queue = Array.from({ length: times }, (_, index) => files.map((file) => ({ file, index: index + 1 }))).flat();
  const runs: Run[] = [];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const run = await runOnce(next.file, next.index, logs);
      runs.push(run);
      process.stdout.write(
        `${run.ok ? 'ok  ' : 'FAIL'} ${run.file} run ${run.index}/${times} in ${run.seconds.toFixed(0)} s${run.ok ? '' : `: ${run.failed.join('; ')}`}\n`,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));

  const rows = files.map((file) => {
    const mine = runs.filter((run) => run.file === file);
    const failures = mine.filter((run) => !run.ok);
    const slowest = Math.max(...mine.map((run) => run.seconds));
    return { file, runs: mine.length, failures: failures.length, slowest, failed: [...new Set(failures.flatMap((run) => run.failed))] };
  });
  const width = Math.max(4, ...files.map((file) => file.length));
  process.stdout.write(`\n${'file'.padEnd(width)} | runs | failures | slowest run\n${'-'.repeat(width)}-|------|----------|------------\n`);
  for (const row of rows)
    process.stdout.write(
      `${row.file.padEnd(width)} | ${String(row.runs).padStart(4)} | ${String(row.failures).padStart(8)} | ${row.slowest.toFixed(0).padStart(9)} s\n`,
    );
  for (const row of rows.filter((r) => r.failures > 0)) process.stdout.write(`\n${row.file} failed in: ${row.failed.join('; ')} (logs in ${logs})\n`);
  const failed = runs.filter((run) => !run.ok).length;
  process.stdout.write(`\n${runs.length - failed} runs passed, ${failed} failed\n`);
  process.exit(failed ? 1 : 0);
}

await main();
