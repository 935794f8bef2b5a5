// Installs the programs the test suite runs as a developer would, each in its own folder under
// test/tools/ with its own lockfile: the MCP Inspector requires Node 22 or newer, so it is kept out of
// the project's install (which works on Node 20) and installed here with the project's own Node 24.
// Run before `npm test`; does nothing when the locked versions are already there.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const TOOLS = ['test/tools/mcp-inspector'];

type Lock = { packages: Record<string, { version?: string; dependencies?: Record<string, string> }> };

/** Every direct dependency of the tool's lockfile is installed at its locked version. */
function installed(folder: string): boolean {
  const lock = JSON.parse(readFileSync(join(folder, 'package-lock.json'), 'utf8')) as Lock;
  return Object.keys(lock.packages['']?.dependencies ?? {}).every((name) => {
    const manifest = join(folder, 'node_modules', name, 'package.json');
    return (
      existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === lock.packages[`node_modules/${name}`]?.version
    );
  });
}

for (const folder of TOOLS) {
  if (installed(folder)) continue;
  // npm itself, run by this Node (the project's), so the tool's engines are checked against it.
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
  const run = spawnSync(npm[0]!, [...npm.slice(1), 'ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: folder, stdio: 'inherit' });
  if (run.status !== 0) {
    process.stderr.write(`Installing the test tool in ${folder} failed (exit ${run.status}).\n`);
    process.exit(run.status ?? 1);
  }
}
