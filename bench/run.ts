// npm run bench [-- NAME…] [--write] [--duration SECONDS] [--connections N] [--requests N] [--rows N]
// Runs the named benches (all by default), prints a summary, and with --write puts the figures
// into bench/README.md. A bench is a report: missing a target never fails the run, only a crash does.
// Every bench/NAME.ts other than run.ts and support.ts is a bench exporting
// run(options, log): Promise<BenchReport>; child-process entry points live in bench/servers/.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type BenchOptions, type BenchReport, REPO_ROOT } from './support.ts';

type BenchModule = { run?: (options: BenchOptions, log: (line: string) => void) => Promise<BenchReport> };

const BENCHES = readdirSync(join(REPO_ROOT, 'bench'))
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && file !== 'run.ts' && file !== 'support.ts')
  .map((file) => file.slice(0, -'.ts'.length))
  .sort();
const README = join(REPO_ROOT, 'bench', 'README.md');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    write: { type: 'boolean', default: false },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    requests: { type: 'string' },
    rows: { type: 'string' },
  },
});

const options: BenchOptions = {
  durationSeconds: Number(values.duration),
  connections: Number(values.connections),
  ...(values.requests === undefined ? {} : { requests: Number(values.requests) }),
  ...(values.rows === undefined ? {} : { rows: Number(values.rows) }),
};
const positiveInteger = (value: number | undefined) => value === undefined || (Number.isInteger(value) && value > 0);
if (!(options.durationSeconds > 0) || !positiveInteger(options.connections) || !positiveInteger(options.requests) || !positiveInteger(options.rows)) {
  process.stderr.write('--duration must be a positive number of seconds; --connections, --requests and --rows positive integers\n');
  process.exit(2);
}
const unknown = positionals.filter((name) => !BENCHES.includes(name));
if (unknown.length) {
  process.stderr.write(`Unknown bench ${unknown.join(', ')}; the benches are: ${BENCHES.join(', ')}\n`);
  process.exit(2);
}
const selected = positionals.length ? positionals : BENCHES;

/** Replaces what lies between <!-- figures:NAME --> and <!-- /figures:NAME --> in the README, or adds such a section. */
function writeFigures(report: BenchReport): void {
  const text = readFileSync(README, 'utf8');
  const start = `<!-- figures:${report.name} -->`;
  const end = `<!-- /figures:${report.name} -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  const updated =
    from >= 0 && to > from
      ? `${text.slice(0, from + start.length)}\n${report.markdown}\n${text.slice(to)}`
      : `${text.trimEnd()}\n\n## ${report.name}\n\n${start}\n${report.markdown}\n${end}\n`;
  writeFileSync(README, updated);
}

const reports: BenchReport[] = [];
let failed = false;
for (const name of selected) {
  process.stdout.write(`\n== ${name} ==\n`);
  try {
    const module = (await import(`./${name}.ts`)) as BenchModule;
    if (typeof module.run !== 'function') throw new Error(`bench/${name}.ts must export run(options: BenchOptions, log): Promise<BenchReport>`);
    reports.push(await module.run(options, (line) => process.stdout.write(`${line}\n`)));
  } catch (error) {
    failed = true;
    process.stderr.write(`${name} failed: ${(error as Error).stack ?? error}\n`);
  }
}

process.stdout.write('\n== Summary ==\n');
for (const report of reports) process.stdout.write(`${report.summary}\n`);
if (values.write) {
  for (const report of reports) writeFigures(report);
  if (reports.length) process.stdout.write(`Figures written to bench/README.md (${reports.map((r) => r.name).join(', ')})\n`);
}
process.exitCode = failed ? 1 : 0;
