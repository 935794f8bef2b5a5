// What `till --help` and `till COMMAND --help` print: one entry per command of main.ts's table
// (their keys must match, so a command cannot be added without its help).

export type CommandHelp = {
  /** One line each: the command's forms, after `till `. */
  usage: string[];
  /** What it does, one sentence. */
  summary: string;
  /** Each option (or argument) and what it means. */
  options: [string, string][];
  /** A command line to copy. */
  example: string;
};

const JSON_OPTION: [string, string] = ['--json', 'print one JSON document instead of text'];
const MODE_OPTION: [string, string] = ['--mode test|live', 'the mode acted in; without it, live where the deployment serves it, else test'];
const TILL_API_OPTIONS: [string, string][] = [
  ['--api-key KEY', 'the API key to call with (default TILL_API_KEY)'],
  ['--till URL', 'the Till called (default TILL_URL, else TILL_BASE_URL, else http://localhost:8080)'],
];

export const COMMAND_HELP = {
  serve: {
    usage: ['serve'],
    summary: 'start the service (what npm start runs); logs are readable lines on a terminal, JSON lines otherwise, one per request',
    options: [],
    example: 'till serve',
  },
  migrate: { usage: ['migrate [--json]'], summary: 'apply database migrations', options: [JSON_OPTION], example: 'till migrate' },
  doctor: {
    usage: ['doctor [--json]'],
    summary: 'check the configuration as a live start does, and more (exit 1 on any ✗)',
    options: [JSON_OPTION],
    example: 'TILL_MODES=live till doctor',
  },
  merchant: {
    usage: [
      'merchant create --name NAME [--wallet 0x…] [--json]',
      'merchant list [--json]',
      'merchant set-wallet MERCHANT_ID 0x… [--mode test|live] [--json]',
      'merchant set-chains MERCHANT_ID CHAIN:TOKEN[,TOKEN…]… [--json]',
      'merchant set-webhook MERCHANT_ID --url URL [--events a,b] [--rotate [--overlap HOURS]] [--mode test|live] [--json]',
    ],
    summary: 'make merchants (with a first API key), list them (never their keys), set the payout wallet, accepted chains and webhook endpoint',
    options: [
      ['--name NAME', 'the business name'],
      ['--wallet 0x…', 'the payout wallet, of both modes'],
      ['CHAIN:TOKEN[,TOKEN…]', 'accepted chains and their tokens (today: base:USDC)'],
      ['--url URL', 'the webhook endpoint (https in live mode)'],
      ['--events a,b', 'the event types sent (default payment.succeeded,session.expired)'],
      ['--rotate', 'a new webhook key and signing secret'],
      ['--overlap HOURS', 'how long the old secret keeps signing beside the new one (default 24, at most 168)'],
      MODE_OPTION,
      JSON_OPTION,
    ],
    example: 'till merchant set-webhook mer_… --url https://shop.example/hooks/till --mode live',
  },
  keys: {
    usage: ['keys create --merchant MERCHANT_ID [--mode test|live] [--scopes a,b] [--json]', 'keys revoke KEY_ID [--json]'],
    summary: "create a merchant's API key (shown once), full or restricted to scopes, or revoke one",
    options: [
      ['--merchant MERCHANT_ID', 'whose key'],
      MODE_OPTION,
      ['--scopes a,b', 'a restricted key: only these scopes (docs/api.md lists them); without it, a full key'],
      JSON_OPTION,
    ],
    example: 'till keys create --merchant mer_… --mode test',
  },
  users: {
    usage: [
      'users create --merchant MERCHANT_ID --email EMAIL [--role owner|admin|developer|viewer] [--password-stdin] [--json]',
      'users list --merchant MERCHANT_ID [--json]',
      'users set-role --email EMAIL --role owner|admin|developer|viewer [--json]',
      'users reset-password --email EMAIL [--password-stdin] [--keep-agents] [--json]',
      'users reset-two-factor --email EMAIL [--json]',
    ],
    summary:
      "a user who signs in for the merchant (password generated and shown once without --password-stdin), the merchant's users and their roles, a role changed (never the last owner's), a new password, or a locked-out user's second factors removed",
    options: [
      ['--merchant MERCHANT_ID', 'the merchant the user signs in for'],
      ['--email EMAIL', "the user's address"],
      ['--role ROLE', 'owner (the default for create), admin, developer or viewer (docs/dashboard.md, "Roles")'],
      ['--password-stdin', 'read the password from standard input'],
      ['--keep-agents', "keep the user's coding agents' authorizations (revoked otherwise)"],
      JSON_OPTION,
    ],
    example: 'till users create --merchant mer_… --email owner@shop.example',
  },
  clients: {
    usage: ['clients create --merchant MERCHANT_ID [--mode test|live] [--json]', 'clients revoke CLIENT_ID [--json]'],
    summary: "client credentials for a merchant's server (secret shown once), or revoke them",
    options: [['--merchant MERCHANT_ID', 'whose client'], MODE_OPTION, JSON_OPTION],
    example: 'till clients create --merchant mer_… --mode live',
  },
  'signing-keys': {
    usage: ['signing-keys rotate [--json]'],
    summary: 'a new token-signing key; old ones stay published until their tokens expire',
    options: [JSON_OPTION],
    example: 'till signing-keys rotate',
  },
  grants: {
    usage: ['grants list --merchant MERCHANT_ID [--json]', 'grants revoke GRANT_ID --merchant MERCHANT_ID [--json]'],
    summary: 'the coding agents a merchant authorized (MCP), with scopes and last use; revoke one',
    options: [['--merchant MERCHANT_ID', 'whose agents'], JSON_OPTION],
    example: 'till grants list --merchant mer_…',
  },
  audit: {
    usage: ['audit list --merchant MERCHANT_ID [--limit N] [--json]'],
    summary: "the MCP tool calls of the merchant's coding agents, refused ones included",
    options: [['--merchant MERCHANT_ID', 'whose calls'], ['--limit N', 'how many, newest first (default 50)'], JSON_OPTION],
    example: 'till audit list --merchant mer_… --limit 20',
  },
  mcp: {
    usage: ['mcp login [--url URL] [--scope "…"] [--port N] [--no-open] [--timeout SECONDS] [--json]'],
    summary: 'development MCP client: consent in a browser, prints an access token and the MCP Inspector command to try it',
    options: [
      ['--url URL', 'the service (default TILL_MCP_URL, else TILL_BASE_URL, else http://localhost:$PORT)'],
      ['--scope "…"', 'the scopes asked for (default "settings:read orders:read")'],
      ['--port N', 'the loopback port of the redirect (default any free one)'],
      ['--no-open', 'only print the consent URL'],
      ['--timeout SECONDS', 'how long to wait for the browser (default 600)'],
      JSON_OPTION,
    ],
    example: 'till mcp login --url http://localhost:8080',
  },
  webhooks: {
    usage: [
      'webhooks list [--merchant MERCHANT_ID] [--mode test|live] [--json]',
      'webhooks redeliver EVENT_ID [--mode test|live] [--json]',
      'webhooks test --merchant MERCHANT_ID [--mode test|live] [--json]',
    ],
    summary: 'webhook deliveries and their attempts; send an event again; send a webhook.test',
    options: [['--merchant MERCHANT_ID', 'only this merchant'], MODE_OPTION, JSON_OPTION],
    example: 'till webhooks list --merchant mer_… --mode test',
  },
  listen: {
    usage: ['listen --forward-to URL [--api-key KEY] [--till URL] [--events a,b] [--from ISO_TIME | --from-event EVENT_ID] [--state FILE]'],
    summary: "follow a Till's events of the key's mode and forward each to URL, signed with a local secret",
    options: [
      ['--forward-to URL', 'where each event is POSTed'],
      ...TILL_API_OPTIONS,
      ['--events a,b', 'only these event types'],
      ['--from ISO_TIME', 'start with the events since this time'],
      ['--from-event EVENT_ID', 'start after this event'],
      ['--state FILE', 'remember the last event forwarded, to go on from it next time'],
    ],
    example: 'till listen --forward-to http://localhost:3000/webhooks --api-key sk_test_…',
  },
  trigger: {
    usage: ['trigger EVENT_TYPE [--api-key KEY] [--till URL] [--json]'],
    summary: 'a test-mode event with made-up values, for trying a receiver (test keys only)',
    options: [['EVENT_TYPE', 'payment.succeeded, session.expired, payment.pending, payment.failed, …'], ...TILL_API_OPTIONS, JSON_OPTION],
    example: 'till trigger payment.succeeded --api-key sk_test_…',
  },
  mail: {
    usage: ['mail list [--status PENDING|SENT|FAILED|KEPT] [--merchant MERCHANT_ID] [--limit N] [--json]'],
    summary: 'mails, newest first: to whom, whether sent, the last error (KEPT: no SMTP server)',
    options: [['--status STATUS', 'only mails in this state'], ['--merchant MERCHANT_ID', 'only this merchant’s'], ['--limit N', 'how many'], JSON_OPTION],
    example: 'till mail list --status FAILED',
  },
  payments: {
    usage: ['payments pending [--limit N] [--json]'],
    summary: "PENDING payments, oldest first: age, validBefore, the reconciler's last finding",
    options: [['--limit N', 'how many'], JSON_OPTION],
    example: 'till payments pending --limit 10',
  },
  live: {
    usage: ['live prepare [--json]'],
    summary:
      'live only (TILL_MODES=live): before its first start on a database used in the sandbox, archive open sandbox sessions, remove the demo user, revoke its test keys',
    options: [JSON_OPTION],
    example: 'TILL_MODES=live till live prepare',
  },
  sandbox: {
    usage: ['sandbox [--port N] [--data-dir DIR]', 'sandbox reset [--json]', 'sandbox fund --address 0x… --usdc 100 [--json]'],
    summary: 'run the sandbox chain + facilitator (fake money), kept in TILL_DATA_DIR; forget it; fund an address',
    options: [
      ['--port N', 'where the sandbox listens'],
      ['--data-dir DIR', 'where its chain is kept (default TILL_DATA_DIR)'],
      ['--address 0x…', 'the address funded'],
      ['--usdc N', 'how much test USDC'],
      JSON_OPTION,
    ],
    example: 'till sandbox fund --address 0x… --usdc 100',
  },
} satisfies Record<string, CommandHelp>;

export type CommandName = keyof typeof COMMAND_HELP;

const indent = (text: string, width: number) => (text.length < width ? text.padEnd(width) : `${text}\n${' '.repeat(width)}`);

/** `till --help`: every command of the table, its forms and what it does. */
export function overview(version: string): string {
  const lines = Object.values(COMMAND_HELP).flatMap((help: CommandHelp) => [...help.usage.map((usage) => `  till ${usage}`), `      ${help.summary}`]);
  return [
    `till ${version} — self-hostable payment sessions`,
    '',
    'Commands (--mode test|live: the mode a command acts in; without it, live where the deployment serves it, else test):',
    ...lines,
    '',
    'till COMMAND --help: the options of a command and an example. till --version: the version.',
    'Settings come from the environment, and from ./.env when present (the environment wins); see .env.example.',
  ].join('\n');
}

/** `till COMMAND --help`. */
export function commandHelp(name: CommandName): string {
  const help: CommandHelp = COMMAND_HELP[name];
  return [
    `till ${name} — ${help.summary}`,
    '',
    'Usage:',
    ...help.usage.map((usage) => `  till ${usage}`),
    ...(help.options.length ? ['', 'Options:', ...help.options.map(([option, meaning]) => `  ${indent(option, 26)}${meaning}`)] : []),
    '',
    'Example:',
    `  ${help.example}`,
  ].join('\n');
}
