// `till --help`, `till COMMAND --help` and `till --version`, as an operator runs them: every command
// of the CLI's table is in the overview, and each explains its forms, every option they name, and
// gives an example. A command added to the table without its help fails here (and in the type check).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { commands } from '../src/cli/commands.ts';
import { runNodeScript } from '../src/testing/child-process.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');
const till = (...args: string[]) => runNodeScript(CLI, args, { env: { ...process.env, NO_COLOR: '1' }, timeoutMs: 60_000 });

test('till --help lists every command of the table, each with what it does', async () => {
  const run = await till('--help');
  assert.equal(run.code, 0, run.stderr);
  const listed = new Set([...run.stdout.matchAll(/^ {2}till ([a-z-]+)/gm)].map((match) => match[1]));
  assert.deepEqual([...listed].sort(), Object.keys(commands).sort());
  assert.match(run.stdout, /till merchant set-chains MERCHANT_ID/);
  assert.match(run.stdout, /till COMMAND --help/);
  const unknown = await till('no-such-command');
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stdout, run.stdout);
});

test('till COMMAND --help, for every command: its forms, each option they name explained, an example; exit 0, nothing run', async () => {
  for (const name of Object.keys(commands)) {
    const run = await till(name, '--help');
    assert.equal(run.code, 0, `till ${name} --help: ${run.stderr}`);
    const [usage = '', rest = ''] = run.stdout.split('\nOptions:\n');
    assert.match(usage, new RegExp(`^till ${name} — .+\\n\\nUsage:\\n {2}till ${name}`), run.stdout);
    const options = rest.split('\nExample:\n')[0]!;
    for (const option of new Set(usage.match(/--[a-z-]+/g) ?? []))
      assert.match(options, new RegExp(`^ {2}${option}\\b`, 'm'), `till ${name} --help explains ${option}`);
    assert.match(run.stdout, new RegExp(`\\nExample:\\n {2}(\\S+=\\S+ )?till ${name}\\b.*\\n$`), `till ${name} --help gives an example`);
  }
  // A subcommand's --help is its command's.
  const sub = await till('merchant', 'set-wallet', '--help');
  assert.equal(sub.code, 0);
  assert.match(sub.stdout, /till merchant set-wallet MERCHANT_ID 0x…/);
});

test("till --version prints the package's version", async () => {
  const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8')) as { version: string };
  const run = await till('--version');
  assert.equal(run.code, 0);
  assert.equal(run.stdout, `till ${version}\n`);
});
