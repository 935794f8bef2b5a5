#!/usr/bin/env node
// Runs the TypeScript CLI, which needs Node 24 (type stripping). The project brings Node 24 as a
// dependency (the `node` package, installed into node_modules by npm install): under an older Node
// (a system's Node 20, say) the CLI runs again under that one, with the same arguments, signals and exit code.
// `till serve` runs again the same way when it lacks V8's heap bounds (serve-flags.mjs).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingHeapFlags } from './serve-flags.mjs';

const NEEDED_MAJOR = 24;
const main = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

const recentEnough = Number(process.versions.node.split('.')[0]) >= NEEDED_MAJOR;
const heapFlags = process.argv[2] === 'serve' ? missingHeapFlags() : [];

if (recentEnough && heapFlags.length === 0) {
  await import('../src/cli/main.ts');
} else {
  let node = process.execPath;
  if (!recentEnough) {
    try {
      node = join(dirname(createRequire(import.meta.url).resolve('node/package.json')), 'bin', 'node');
    } catch {
      process.stderr.write(`till needs Node ${NEEDED_MAJOR}; this is ${process.version} and the project's own Node is not installed (run npm install)\n`);
      process.exit(1);
    }
  }
  const child = spawn(node, [...heapFlags, main, ...process.argv.slice(2)], { stdio: 'inherit' });
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('error', (error) => {
    process.stderr.write(`till: could not start ${node}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(name, forward);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
