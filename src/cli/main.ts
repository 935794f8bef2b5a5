import { readFileSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { ConfigError } from '../config.ts';
import { commands } from './commands.ts';
import { type CommandName, commandHelp, overview } from './help.ts';
import { UsageError } from './output.ts';

// Modules compiled (and stripped of their types) are kept in the OS temp folder between runs, so a
// start loads the service in about 40 % less CPU time; the sandbox's process inherits the setting.
const compileCache = enableCompileCache();
if (compileCache.directory) process.env.NODE_COMPILE_CACHE ??= compileCache.directory;

/**
 * Settings from `.env` in the working directory, when there is one; a variable already set in the
 * environment wins over the file (Node's own loader never overrides).
 */
function loadDotEnv(): void {
  try {
    process.loadEnvFile('.env');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new UsageError(`.env could not be read: ${(error as Error).message}`);
  }
}

/** The version of the package this CLI is part of. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

const isCommand = (name: string | undefined): name is CommandName => name !== undefined && Object.hasOwn(commands, name);

async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-v') {
    process.stdout.write(`till ${version()}\n`);
    return;
  }
  if (!isCommand(name)) {
    process.stdout.write(`${overview(version())}\n`);
    process.exitCode = name && name !== 'help' && name !== '--help' && name !== '-h' ? 2 : 0;
    return;
  }
  // Help is answered before the command (or .env) is loaded: it needs no settings.
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${commandHelp(name)}\n`);
    return;
  }
  loadDotEnv();
  await (await commands[name]())(args);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`till: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`till: ${(error as Error).message}\n`);
  process.exit(1);
});
