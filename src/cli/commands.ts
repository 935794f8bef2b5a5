// The commands of `till`, each with its help in help.ts (the table's keys are the help's).
import type { CommandName } from './help.ts';

type Command = (args: string[]) => Promise<void>;

/** Each command's module is loaded when it runs: a start of `till serve` loads no other command's code. */
export const commands: Record<CommandName, () => Promise<Command>> = {
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
