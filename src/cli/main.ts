import { enableCompileCache } from 'node:module';
import { ConfigError } from '../config.ts';
import { UsageError } from './output.ts';

// Modules compiled (and stripped of their types) are kept in the OS temp folder between runs, so a
// start loads the service in about 40 % less CPU time; the sandbox's process inherits the setting.
const compileCache = enableCompileCache();
if (compileCache.directory) process.env.NODE_COMPILE_CACHE ??= compileCache.directory;

const USAGE = `till — self-hostable payment sessions

Commands (--mode test|live: the mode a command acts in; without it, live where the deployment serves it, else test):
  till serve                                   start the service (what npm start runs)
  till migrate [--json]                        apply database migrations
  till doctor [--json]                         check the configuration as a live start does, and more (exit 1 on any ✗)
  till merchant create --name NAME [--wallet 0x…] [--json]
  till merchant list [--json]                  merchants, wallets, API key ids (never the keys)
  till merchant set-wallet MERCHANT_ID 0x… [--mode test|live] [--json]
  till merchant set-webhook MERCHANT_ID --url URL [--events a,b] [--rotate [--overlap HOURS]] [--mode test|live] [--json]
  till keys create --merchant MERCHANT_ID [--mode test|live] [--scopes a,b] [--json]
  till keys revoke KEY_ID [--json]
  till users create --merchant MERCHANT_ID --email EMAIL [--password-stdin] [--json]
                                               a user who signs in for the merchant (password generated and shown once without --password-stdin)
  till users reset-password --email EMAIL [--password-stdin] [--keep-agents] [--json]
  till users reset-two-factor --email EMAIL [--json]
                                               removes a locked-out user's authenticator app, recovery codes and passkeys
  till clients create --merchant MERCHANT_ID [--mode test|live] [--json]
                                               client credentials for a merchant's server (secret shown once)
  till clients revoke CLIENT_ID [--json]
  till grants list --merchant MERCHANT_ID [--json]
                                               the coding agents a merchant authorized (MCP), with scopes and last use
  till grants revoke GRANT_ID --merchant MERCHANT_ID [--json]
  till audit list --merchant MERCHANT_ID [--limit N] [--json]
                                               the MCP tool calls of the merchant's coding agents, refused ones included
  till mcp login [--url URL] [--scope "…"] [--no-open] [--json]   development MCP client: consent in a browser, prints an access token
  till signing-keys rotate [--json]            a new token-signing key; old ones stay published until their tokens expire
  till webhooks list [--merchant MERCHANT_ID] [--mode test|live] [--json]
  till webhooks redeliver EVENT_ID [--mode test|live] [--json]
  till webhooks test --merchant MERCHANT_ID [--mode test|live] [--json]
  till listen --forward-to URL [--api-key KEY] [--till URL] [--events a,b] [--from ISO_TIME | --from-event EVENT_ID] [--state FILE]
                                               follow a Till's events of the key's mode and forward each to URL, signed with a local secret
  till trigger EVENT_TYPE [--api-key KEY] [--till URL] [--json]
                                               a test-mode event with made-up values, for trying a receiver (test keys only)
  till mail list [--status PENDING|SENT|FAILED|KEPT] [--merchant MERCHANT_ID] [--limit N] [--json]
                                               mails, newest first: to whom, whether sent, the last error (KEPT: no SMTP server)
  till payments pending [--limit N] [--json]   PENDING payments, oldest first: age, validBefore, the reconciler's last finding
  till live prepare [--json]                   live only (TILL_MODES=live): before its first start on a database used in the
                                               sandbox, archive open sandbox sessions, remove the demo user, revoke its test keys
  till sandbox [--port N] [--data-dir DIR]     run the sandbox chain + facilitator (fake money), kept in TILL_DATA_DIR
  till sandbox reset [--json]                  forget the sandbox chain: the next start begins empty
  till sandbox fund --address 0x… --usdc 100 [--json]
Settings come from the environment, and from ./.env when present (the environment wins); see .env.example.`;

type Command = (args: string[]) => Promise<void>;

/** Each command's module is loaded when it runs: a start of `till serve` loads no other command's code. */
const commands: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./serve.ts')).serveCommand,
  migrate: async () => (await import('./operator.ts')).migrateCommand,
  doctor: async () => (await import('./doctor.ts')).doctorCommand,
  merchant: async () => (await import('./operator.ts')).merchantCommand,
  keys: async () => (await import('./operator.ts')).keysCommand,
  sandbox: async () => (await import('./sandbox.ts')).sandboxCommand,
  webhooks: async () => (await import('./webhooks.ts')).webhooksCommand,
  listen: async () => (await import('./listen.ts')).listenCommand,
  trigger: async () => (await import('./trigger.ts')).triggerCommand,
  users: async () => (await import('./users.ts')).usersCommand,
  clients: async () => (await import('./clients.ts')).clientsCommand,
  'signing-keys': async () => (await import('./clients.ts')).signingKeysCommand,
  grants: async () => (await import('./grants.ts')).grantsCommand,
  audit: async () => (await import('./audit.ts')).auditCommand,
  mcp: async () => (await import('./mcp.ts')).mcpCommand,
  payments: async () => (await import('./payments.ts')).paymentsCommand,
  mail: async () => (await import('./mail.ts')).mailCommand,
  live: async () => (await import('./live.ts')).liveCommand,
};

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

async function main(argv: string[]): Promise<void> {
  loadDotEnv();
  const [name, ...args] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stdout.write(`${USAGE}\n`);
    process.exitCode = name && name !== 'help' && name !== '--help' ? 2 : 0;
    return;
  }
  await (await command())(args);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`till: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`till: ${(error as Error).message}\n`);
  process.exit(1);
});
