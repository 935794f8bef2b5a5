import { createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { loadMailSettings, type MailSettings } from './common/mail-settings.ts';
import type { Mode } from './common/modes.ts';
import { BASE, BASE_SEPOLIA, BASE_USDC_ADDRESS, NETWORKS, type Network } from './common/network.ts';
import { redactUrl } from './common/redact.ts';

export type WebhookSettings = {
  /** Delay before each retry, in milliseconds; the number of entries is the number of retries. */
  retrySchedule: number[];
  /** Lets deliveries reach a receiver on this machine (127.0.0.0/8, ::1); on by default in the sandbox. */
  allowLoopbackTargets: boolean;
  /** Lifts the SSRF guard for every private address, for local development and tests only. */
  allowPrivateTargets: boolean;
};

/**
 * Where one mode's payments go: its facilitator, its chain's RPC and token, its explorer. Test mode
 * pays on the sandbox (`till sandbox`, built in or shared), live mode on Base.
 */
export type ChainSettings = {
  /** Unset in test mode until `till serve` has started (or found) the built-in sandbox. */
  facilitatorUrl: string | undefined;
  facilitator: { kind: 'url' } | { kind: 'coinbase'; apiKeyId: string; apiKeySecret: string };
  facilitatorHeaders: Record<string, string>;
  rpcUrl: string | undefined;
  usdcAddress: string | undefined;
  explorerTxUrl: string;
  finalityConfirmations: number;
  /** The chain it is: Base (live, and the sandbox that imitates it) or Base Sepolia (TILL_TEST_NETWORK). */
  network: Network;
  /** Whether it is a Till sandbox (fake money, its faucet and explorer under /sandbox on this service). */
  sandbox: boolean;
};

/** Every setting Till reads, from the environment, with its embedded default. */
export type Config = {
  port: number;
  host: string;
  baseUrl: string;
  authUrl: string;
  mcpUrl: string;
  databaseUrl: string;
  databaseKind: 'sqlite' | 'postgres';
  sqlitePath: string | undefined;
  dataDir: string;
  sessionTtlSeconds: number;
  secretKey: Buffer;
  /**
   * `live` when a real facilitator is configured (the deployment then serves live and, unless
   * TILL_MODES says otherwise, test mode beside it); `sandbox` otherwise: fake money, test keys only.
   * What a deployment checks at start; a request's mode is its credential's, never this.
   */
  mode: 'sandbox' | 'live';
  /** The modes this deployment serves (TILL_MODES); a credential of another mode is refused. */
  modes: readonly Mode[];
  /** Each served mode's facilitator and chain. The top-level chain settings below are the deployment's main mode's, as given. */
  chains: Partial<Record<Mode, ChainSettings>>;
  facilitatorUrl: string | undefined;
  /**
   * How Till authenticates to the facilitator: static headers (`url`, any facilitator), or a JWT signed
   * per request with a CDP API key (`coinbase`, Coinbase's hosted facilitator, through `@coinbase/x402`).
   */
  facilitator: { kind: 'url' } | { kind: 'coinbase'; apiKeyId: string; apiKeySecret: string };
  facilitatorHeaders: Record<string, string>;
  /** Live mode accepts plain http to this machine (facilitator, RPC, public URLs) for rehearsals and development only. */
  devAllowHttpLoopback: boolean;
  baseRpcUrl: string | undefined;
  usdcAddress: string | undefined;
  explorerTxUrl: string;
  sandboxPort: number;
  /** The sandbox's own HTTP server (faucet, explorer, chain RPC); sandbox mode only. */
  sandboxUrl: string | undefined;
  logLevel: string;
  databasePoolSize: number;
  role: 'all' | 'api' | 'worker';
  reconcileIntervalMs: number;
  /** A PENDING payment younger than this is left to the request settling it; never shorter than the settle timeout. */
  reconcileGraceMs: number;
  /** How long a request waits for the facilitator's settle answer before answering payment_in_progress. */
  facilitatorSettleTimeoutMs: number;
  finalityConfirmations: number;
  /** How often the expiry sweeper looks for TRANSIENT sessions past their deadline. */
  expirySweepIntervalMs: number;
  /**
   * Which X-Forwarded-For hops to believe (client IPs for rate limits), as Fastify's `trustProxy`
   * takes it: false (none), a number of proxy hops in front of the service, or the proxies' addresses.
   */
  trustProxy: false | number | string[];
  /** Bearer token `GET /metrics` asks for; unset: open in the sandbox, closed in live mode. */
  metricsToken: string | undefined;
  /** Exchange rates document over HTTP; unset: the static sandbox table. */
  ratesUrl: string | undefined;
  ratesMaxAgeSeconds: number;
  /** Payment proofs one client IP may send per minute, checked first and alone (docs/x402.md, "Rate limits"). */
  x402ProofsPerMinutePerIp: number;
  /** Sessions (E1) one API key, or one merchant's bearer tokens, may create per minute, across every instance. */
  sessionsPerMinutePerKey: number;
  /** `webhook.test` events one merchant may queue per hour (API and dashboard together). */
  webhookTestEventsPerHour: number;
  /** Proofs one payer (its signature recovered) may send per minute for one session; a smart wallet's count per session and client. */
  x402ProofsPerMinutePerPayer: number;
  /** Proofs of one session that may reach the facilitator per minute, whoever sends them. */
  x402ProofsPerMinutePerSession: number;
  /** New quotes one client IP may add to one session per minute (each distinct ?amount= of an editable session is one)… */
  x402QuotesPerMinutePerClient: number;
  /** …and every client together, a backstop far above one client's. */
  x402QuotesPerMinutePerSession: number;
  webhooks: WebhookSettings;
  /** SMTP and the From of mails (common/mail-settings.ts). */
  mail: MailSettings;
  /** A signed-in merchant user's browser session ends after this long without a request… */
  signInIdleSeconds: number;
  /** …and this long after sign-in, whatever its activity. */
  signInMaxSeconds: number;
  /** An upstream OpenID Connect provider merchants' users may sign in with; unset: email and password only. */
  oidc: { issuer: string; clientId: string; clientSecret: string } | undefined;
  /** Self-serve sign-up of new merchant accounts at /sign-up (TILL_SIGN_UP), verified by an emailed link; off unless the operator turns it on. */
  signUp: boolean;
  /** OAuth clients whose client_id is an http URL on this machine, for developing an agent locally; never in live mode. */
  oauthDevAllowLoopbackClients: boolean;
  /** Client metadata documents /oauth/authorize may fetch per minute for one client IP (answers from the cache are free). */
  oauthClientFetchesPerMinutePerIp: number;
};

export class ConfigError extends Error {
  readonly setting: string;
  constructor(setting: string, message: string) {
    super(`Invalid setting ${setting}: ${message}`);
    this.setting = setting;
  }
}

/** Coinbase's hosted facilitator (what `createFacilitatorConfig().url` of `@coinbase/x402` names; a test keeps the two equal). */
export const COINBASE_FACILITATOR_URL = 'https://api.cdp.coinbase.com/platform/v2/x402';

const httpUrl = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ''));
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x address');

/** Settings whose URL may hold a provider's key (`https://base-mainnet.g.alchemy.com/v2/KEY`): shown as `https://host/…` only. */
const KEYED_URLS = new Set(['TILL_BASE_RPC_URL']);
const shownValue = (name: string, value: string) => (KEYED_URLS.has(name) ? redactUrl(value) : value);

function read<T>(env: NodeJS.ProcessEnv, name: string, schema: z.ZodType<T>, fallback: string | undefined): T | undefined {
  const raw = env[name] === undefined || env[name] === '' ? fallback : env[name];
  if (raw === undefined) return undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(name, `${JSON.stringify(shownValue(name, raw))} — ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('a default was expected');
  return value;
}

/**
 * The secret key encrypts secrets that must be shown or sent again (webhook keys).
 * On SQLite it is generated once and kept beside the database; on PostgreSQL every
 * instance must share one, so it has to be given.
 */
function loadSecretKey(env: NodeJS.ProcessEnv, kind: 'sqlite' | 'postgres', dataDir: string): Buffer {
  const given = env.TILL_SECRET_KEY;
  if (given) {
    const key = Buffer.from(given, /^[0-9a-f]{64}$/i.test(given) ? 'hex' : 'base64');
    if (key.length !== 32) throw new ConfigError('TILL_SECRET_KEY', 'must be 32 bytes, as 64 hex characters or base64');
    return key;
  }
  if (kind === 'postgres') {
    throw new ConfigError('TILL_SECRET_KEY', 'is required with PostgreSQL so that every instance shares it (generate one with: openssl rand -hex 32)');
  }
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}

/** About three days: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseRetrySchedule(text: string): number[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h|d)\s*$/.exec(part);
    if (!match)
      throw new ConfigError(
        'TILL_WEBHOOK_RETRY_SCHEDULE',
        `${JSON.stringify(part.trim())} is not a duration; write a comma-separated list such as 1s,2s,5s (units ms, s, m, h, d)`,
      );
    return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
  });
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (value !== 'true' && value !== 'false') throw new ConfigError(name, `${JSON.stringify(value)} — must be true or false`);
  return value === 'true';
}

/**
 * The webhook settings, from the environment, validated with a message that names the bad setting.
 * A merchant's first receiver is usually on their own machine, so the sandbox reaches loopback
 * unless told not to; live mode reaches only public addresses unless the operator allows more.
 */
export function loadWebhookSettings(env: NodeJS.ProcessEnv, mode: Config['mode']): WebhookSettings {
  return {
    retrySchedule: parseRetrySchedule(env.TILL_WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE),
    allowLoopbackTargets: flag(env, 'TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS', mode === 'sandbox'),
    allowPrivateTargets: flag(env, 'TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
  };
}

function parseHeaders(raw: string | undefined): Record<string, string> {
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('TILL_FACILITATOR_HEADERS', 'must be a JSON object of header names to values');
  }
  const headers = z.record(z.string(), z.string()).safeParse(parsed);
  if (!headers.success) throw new ConfigError('TILL_FACILITATOR_HEADERS', 'must be a JSON object of header names to string values');
  return headers.data;
}

/** The upstream identity provider: its three settings together, or none of them. */
function loadOidc(env: NodeJS.ProcessEnv): Config['oidc'] {
  const issuer = read(env, 'TILL_OIDC_ISSUER', httpUrl, undefined);
  const clientId = env.TILL_OIDC_CLIENT_ID || undefined;
  const clientSecret = env.TILL_OIDC_CLIENT_SECRET || undefined;
  if (!issuer && !clientId && !clientSecret) return undefined;
  if (!issuer || !clientId || !clientSecret)
    throw new ConfigError(
      issuer ? (clientId ? 'TILL_OIDC_CLIENT_SECRET' : 'TILL_OIDC_CLIENT_ID') : 'TILL_OIDC_ISSUER',
      'is required with the other TILL_OIDC_ settings',
    );
  return { issuer, clientId, clientSecret };
}

/**
 * TILL_TRUST_PROXY: `false`, a number of proxy hops (`1`: the one balancer in front), or a comma list
 * of the proxies' addresses or CIDR ranges. `true` (every hop, so any client could name its own
 * address) is refused.
 */
function loadTrustProxy(env: NodeJS.ProcessEnv): false | number | string[] {
  const value = (env.TILL_TRUST_PROXY ?? '').trim();
  if (value === '' || value === 'false') return false;
  if (value === 'true')
    throw new ConfigError(
      'TILL_TRUST_PROXY',
      'true would believe every X-Forwarded-For hop, so any client could name its own address: give the number of proxies in front of the service (1 for one balancer) or their addresses (10.0.0.5,10.0.1.0/24)',
    );
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops < 1 || hops > 10) throw new ConfigError('TILL_TRUST_PROXY', "must be a number of proxy hops from 1 to 10, false, or the proxies' addresses");
    return hops;
  }
  const addresses = value.split(',').map((part: string) => part.trim());
  for (const address of addresses)
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(address) || !(isIP(address.split('/')[0]!) > 0))
      throw new ConfigError('TILL_TRUST_PROXY', `${address} is not an IP address or CIDR range: give false, a number of proxy hops, or the proxies' addresses`);
  return addresses;
}

/** Loopback clients are for an agent under development; a live service serves real merchants only. */
function loadDevAllowLoopbackClients(env: NodeJS.ProcessEnv, mode: Config['mode']): boolean {
  const allowed = flag(env, 'TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS', false);
  if (allowed && mode === 'live')
    throw new ConfigError('TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS', 'is for local development and is refused in live mode (TILL_FACILITATOR_URL is set)');
  return allowed;
}

/**
 * The settle timeout and the reconciler's grace. A grace shorter than the timeout would let the
 * reconciler judge a payment whose settle answer may still be on its way.
 */
function loadReconcileTimes(env: NodeJS.ProcessEnv) {
  const facilitatorSettleTimeoutMs = required(read(env, 'TILL_FACILITATOR_SETTLE_TIMEOUT_MS', positiveInt, '30000'));
  const reconcileGraceMs = required(read(env, 'TILL_RECONCILE_GRACE_MS', z.coerce.number().int().min(0), '45000'));
  if (reconcileGraceMs < facilitatorSettleTimeoutMs)
    throw new ConfigError(
      'TILL_RECONCILE_GRACE_MS',
      `must be at least TILL_FACILITATOR_SETTLE_TIMEOUT_MS (${facilitatorSettleTimeoutMs} ms), so a payment is never judged while its settle answer may still come`,
    );
  return { facilitatorSettleTimeoutMs, reconcileGraceMs };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const listenPort = required(read(env, 'PORT', port, '8080'));
  const host = required(read(env, 'TILL_HOST', z.string().min(1), '127.0.0.1'));
  const localUrl = `http://localhost:${listenPort}`;
  const baseUrl = required(read(env, 'TILL_BASE_URL', httpUrl, localUrl));
  const dataDir = resolve(required(read(env, 'TILL_DATA_DIR', z.string().min(1), './data')));
  const databaseUrl = required(read(env, 'TILL_DATABASE_URL', z.string().min(1), `sqlite:${join(dataDir, 'till.sqlite')}`));
  let databaseKind: Config['databaseKind'];
  let sqlitePath: string | undefined;
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    databaseKind = 'postgres';
  } else if (databaseUrl.startsWith('sqlite:')) {
    databaseKind = 'sqlite';
    sqlitePath = resolve(databaseUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
    mkdirSync(dirname(sqlitePath), { recursive: true });
  } else {
    throw new ConfigError('TILL_DATABASE_URL', 'must start with sqlite: (a file path) or postgres://');
  }
  const facilitator = loadFacilitator(env);
  const facilitatorUrl = read(env, 'TILL_FACILITATOR_URL', httpUrl, facilitator.kind === 'coinbase' ? COINBASE_FACILITATOR_URL : undefined);
  const sandboxFlag = flag(env, 'TILL_SANDBOX', false);
  const mode = facilitatorUrl && !sandboxFlag ? 'live' : 'sandbox';
  const modes = loadModes(env, mode);
  const role = required(read(env, 'TILL_ROLE', z.enum(['all', 'api', 'worker']), 'all'));
  if (databaseKind === 'sqlite' && role !== 'all') {
    throw new ConfigError('TILL_ROLE', 'roles can be split across processes only on PostgreSQL; SQLite runs as one process with role "all"');
  }
  const config: Config = {
    port: listenPort,
    host,
    baseUrl,
    authUrl: required(read(env, 'TILL_AUTH_URL', httpUrl, baseUrl)),
    mcpUrl: required(read(env, 'TILL_MCP_URL', httpUrl, baseUrl)),
    databaseUrl,
    databaseKind,
    sqlitePath,
    dataDir,
    sessionTtlSeconds: required(read(env, 'TILL_SESSION_TTL_SECONDS', positiveInt, '86400')),
    secretKey: loadSecretKey(env, databaseKind, dataDir),
    mode,
    modes,
    chains: {},
    facilitatorUrl,
    facilitator,
    facilitatorHeaders: parseHeaders(env.TILL_FACILITATOR_HEADERS),
    devAllowHttpLoopback: flag(env, 'TILL_DEV_ALLOW_HTTP_LOOPBACK', false),
    baseRpcUrl: read(env, 'TILL_BASE_RPC_URL', httpUrl, undefined),
    usdcAddress: read(env, 'TILL_USDC_ADDRESS', address, mode === 'live' ? BASE_USDC_ADDRESS : undefined),
    explorerTxUrl: required(
      read(
        env,
        'TILL_EXPLORER_TX_URL',
        z.string().includes('{hash}', { message: 'must contain {hash}' }),
        mode === 'live' ? 'https://basescan.org/tx/{hash}' : `${baseUrl}/sandbox/tx/{hash}`,
      ),
    ),
    sandboxPort: required(read(env, 'TILL_SANDBOX_PORT', port, '8545')),
    sandboxUrl: modes.includes('sandbox') ? read(env, 'TILL_SANDBOX_URL', httpUrl, undefined) : undefined,
    logLevel: required(read(env, 'TILL_LOG_LEVEL', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info')),
    databasePoolSize: required(read(env, 'TILL_DATABASE_POOL_SIZE', positiveInt, '10')),
    role,
    reconcileIntervalMs: required(read(env, 'TILL_RECONCILE_INTERVAL_MS', positiveInt, '5000')),
    ...loadReconcileTimes(env),
    finalityConfirmations: required(read(env, 'TILL_FINALITY_CONFIRMATIONS', z.coerce.number().int().min(0), mode === 'live' ? '10' : '0')),
    expirySweepIntervalMs: required(read(env, 'TILL_EXPIRY_SWEEP_INTERVAL_MS', positiveInt, '5000')),
    trustProxy: loadTrustProxy(env),
    metricsToken: read(env, 'TILL_METRICS_TOKEN', z.string().min(32, 'must be at least 32 characters (e.g. openssl rand -hex 32)'), undefined),
    ratesUrl: read(env, 'TILL_RATES_URL', z.url({ protocol: /^https?$/ }), undefined),
    ratesMaxAgeSeconds: required(read(env, 'TILL_RATES_MAX_AGE_SECONDS', positiveInt, '3600')),
    sessionsPerMinutePerKey: required(read(env, 'TILL_SESSIONS_PER_MINUTE_PER_KEY', positiveInt, '6000')),
    webhookTestEventsPerHour: required(read(env, 'TILL_WEBHOOK_TEST_EVENTS_PER_HOUR', positiveInt, '20')),
    x402ProofsPerMinutePerIp: required(read(env, 'TILL_X402_PROOFS_PER_MINUTE_PER_IP', positiveInt, '600')),
    x402ProofsPerMinutePerPayer: required(read(env, 'TILL_X402_PROOFS_PER_MINUTE_PER_PAYER', positiveInt, '600')),
    x402ProofsPerMinutePerSession: required(read(env, 'TILL_X402_PROOFS_PER_MINUTE_PER_SESSION', positiveInt, '6000')),
    x402QuotesPerMinutePerClient: required(read(env, 'TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT', positiveInt, '120')),
    x402QuotesPerMinutePerSession: required(read(env, 'TILL_X402_QUOTES_PER_MINUTE_PER_SESSION', positiveInt, '2400')),
    webhooks: loadWebhookSettings(env, mode),
    mail: loadMailSettings(env, modes, (setting, message) => new ConfigError(setting, message)),
    signInIdleSeconds: required(read(env, 'TILL_SIGN_IN_IDLE_SECONDS', positiveInt, '1800')),
    signInMaxSeconds: required(read(env, 'TILL_SIGN_IN_MAX_SECONDS', positiveInt, '43200')),
    oidc: loadOidc(env),
    signUp: flag(env, 'TILL_SIGN_UP', false),
    oauthDevAllowLoopbackClients: loadDevAllowLoopbackClients(env, mode),
    oauthClientFetchesPerMinutePerIp: required(read(env, 'TILL_OAUTH_CLIENT_FETCHES_PER_MINUTE_PER_IP', positiveInt, '30')),
  };
  if (sandboxFlag && config.usdcAddress?.toLowerCase() === BASE_USDC_ADDRESS.toLowerCase())
    throw new ConfigError(
      'TILL_SANDBOX',
      `is true while TILL_USDC_ADDRESS is Base's real USDC (${BASE_USDC_ADDRESS}): test keys would take real money. Remove TILL_SANDBOX for live mode, or point TILL_USDC_ADDRESS at a test token`,
    );
  if (mode === 'live') checkLiveSettings(config);
  config.chains = loadChains(env, config);
  return config;
}

/**
 * TILL_MODES: `test`, `live` or `test,live`. A deployment with a live facilitator serves both by
 * default (test mode beside live, as merchants know it from Stripe); without one, test only.
 */
function loadModes(env: NodeJS.ProcessEnv, mode: Config['mode']): Mode[] {
  const raw = env.TILL_MODES?.trim();
  if (!raw) return mode === 'live' ? ['live', 'sandbox'] : ['sandbox'];
  const names = [...new Set(raw.split(',').map((name) => name.trim().toLowerCase()))];
  const unknown = names.find((name) => name !== 'test' && name !== 'live');
  if (unknown !== undefined) throw new ConfigError('TILL_MODES', `${JSON.stringify(unknown)} is not a mode: write test, live or test,live`);
  if (names.includes('live') && mode !== 'live')
    throw new ConfigError('TILL_MODES', 'names live, but no live facilitator is configured (set TILL_FACILITATOR_URL, or TILL_FACILITATOR=coinbase)');
  if (!names.includes('live') && mode === 'live')
    throw new ConfigError(
      'TILL_MODES',
      'leaves live out while a live facilitator is configured: write live or test,live (or remove TILL_FACILITATOR_URL for a test-only deployment)',
    );
  return names.map((name) => (name === 'test' ? 'sandbox' : 'live'));
}

/**
 * Each served mode's chain. The deployment's main mode takes the settings as given (TILL_FACILITATOR_URL,
 * TILL_BASE_RPC_URL, TILL_USDC_ADDRESS…). Test mode beside live pays on a sandbox: a shared one
 * (`till sandbox` as its own service, TILL_SANDBOX_URL), one named setting by setting
 * (TILL_TEST_FACILITATOR_URL, TILL_TEST_RPC_URL, TILL_TEST_USDC_ADDRESS), or, with neither, the one
 * `till serve` starts beside a single instance.
 */
function loadChains(env: NodeJS.ProcessEnv, config: Config): Config['chains'] {
  const main: ChainSettings = {
    facilitatorUrl: config.facilitatorUrl,
    facilitator: config.facilitator,
    facilitatorHeaders: config.facilitatorHeaders,
    rpcUrl: config.baseRpcUrl,
    usdcAddress: config.usdcAddress,
    explorerTxUrl: config.explorerTxUrl,
    finalityConfirmations: config.finalityConfirmations,
    network: BASE,
    sandbox: config.mode === 'sandbox',
  };
  if (config.mode === 'sandbox') return { sandbox: main };
  const chains: Config['chains'] = { live: main };
  if (!config.modes.includes('sandbox')) return chains;
  const shared = config.sandboxUrl;
  const testUsdc = read(env, 'TILL_TEST_USDC_ADDRESS', address, undefined);
  if (testUsdc?.toLowerCase() === BASE_USDC_ADDRESS.toLowerCase())
    throw new ConfigError(
      'TILL_TEST_USDC_ADDRESS',
      `is Base's real USDC (${BASE_USDC_ADDRESS}): test mode would take real money; name the sandbox's or a test network's token`,
    );
  const facilitatorUrl = read(env, 'TILL_TEST_FACILITATOR_URL', httpUrl, undefined);
  const network = NETWORKS[required(read(env, 'TILL_TEST_NETWORK', z.enum(['base', 'base-sepolia']), 'base'))];
  if (network !== BASE && !facilitatorUrl)
    throw new ConfigError(
      'TILL_TEST_NETWORK',
      `${network.v1} needs TILL_TEST_FACILITATOR_URL (a facilitator that settles there), TILL_TEST_RPC_URL and TILL_TEST_USDC_ADDRESS: the sandbox is a chain of its own`,
    );
  const onSandbox = facilitatorUrl === undefined;
  chains.sandbox = {
    facilitatorUrl: facilitatorUrl ?? (shared && `${shared}/facilitator`),
    facilitator: { kind: 'url' },
    facilitatorHeaders: {},
    rpcUrl: read(env, 'TILL_TEST_RPC_URL', httpUrl, onSandbox && shared ? `${shared}/rpc` : undefined),
    usdcAddress: testUsdc,
    explorerTxUrl: required(
      read(
        env,
        'TILL_TEST_EXPLORER_TX_URL',
        z.string().includes('{hash}', { message: 'must contain {hash}' }),
        network === BASE_SEPOLIA ? 'https://sepolia.basescan.org/tx/{hash}' : `${config.baseUrl}/sandbox/tx/{hash}`,
      ),
    ),
    finalityConfirmations: 0,
    network,
    sandbox: onSandbox,
  };
  return chains;
}

/** The block-explorer link template of a mode's transactions (test mode's is the sandbox's own explorer). */
export function explorerTxUrlOf(config: Pick<Config, 'chains' | 'baseUrl'>, mode: Mode): string {
  return config.chains[mode]?.explorerTxUrl ?? (mode === 'live' ? 'https://basescan.org/tx/{hash}' : `${config.baseUrl}/sandbox/tx/{hash}`);
}

/** The network a mode's payments are on: Base, unless test mode is set to another (TILL_TEST_NETWORK). */
export const networkOf = (config: Pick<Config, 'chains'>, mode: Mode): Network => config.chains[mode]?.network ?? BASE;

/** The JSON-RPC a browser wallet is asked to add for a mode's chain: a sandbox's own through this service, else the network's public one. */
export function walletRpcUrlOf(config: Pick<Config, 'chains' | 'baseUrl'>, mode: Mode): string {
  const chain = config.chains[mode];
  return (chain ? chain.sandbox : mode === 'sandbox') ? `${config.baseUrl}/sandbox/rpc` : networkOf(config, mode).publicRpcUrl;
}

/** The facilitator's kind and credentials; `coinbase` needs a CDP API key. */
function loadFacilitator(env: NodeJS.ProcessEnv): Config['facilitator'] {
  const kind = required(read(env, 'TILL_FACILITATOR', z.enum(['url', 'coinbase']), 'url'));
  if (kind === 'url') return { kind };
  const apiKeyId = env.CDP_API_KEY_ID?.trim();
  const apiKeySecret = env.CDP_API_KEY_SECRET?.trim();
  for (const [name, value] of [
    ['CDP_API_KEY_ID', apiKeyId],
    ['CDP_API_KEY_SECRET', apiKeySecret],
  ] as const)
    if (!value)
      throw new ConfigError(
        name,
        'is required with TILL_FACILITATOR=coinbase: create a Secret API key at portal.cdp.coinbase.com and set CDP_API_KEY_ID and CDP_API_KEY_SECRET',
      );
  return { kind, apiKeyId: apiKeyId!, apiKeySecret: cdpKeySecret(apiKeySecret!) };
}

/**
 * A CDP API key secret as `@coinbase/x402` signs with it: an Ed25519 key (base64 of 64 bytes) as
 * given; an ECDSA key in PEM as PKCS#8, whatever PEM the portal handed out (SEC1 included), with
 * `\n` written as two characters in an env file read as line breaks.
 */
function cdpKeySecret(secret: string): string {
  if (!secret.includes('-----BEGIN')) {
    if (Buffer.from(secret, 'base64').length !== 64)
      throw new ConfigError(
        'CDP_API_KEY_SECRET',
        'is neither an Ed25519 key (base64 of 64 bytes) nor an EC private key in PEM: paste the secret of a CDP Secret API key',
      );
    return secret;
  }
  try {
    return createPrivateKey(secret.replaceAll('\\n', '\n')).export({ type: 'pkcs8', format: 'pem' }).toString();
  } catch {
    throw new ConfigError('CDP_API_KEY_SECRET', 'holds a PEM block that is not a private key: paste the secret of a CDP Secret API key');
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * What live mode refuses at start, before any network check: money must never move through a plain
 * http hop or without a reconciler to find a lost settle answer.
 */
function checkLiveSettings(config: Config): void {
  if (!config.baseRpcUrl && config.role !== 'api')
    throw new ConfigError(
      'TILL_BASE_RPC_URL',
      `is required in live mode on role "${config.role}": the reconciler reads Base through it, so a payment whose settle answer is lost is never left PENDING (give an https JSON-RPC URL of a Base mainnet node)`,
    );
  const urls: [string, string | undefined][] = [
    ['TILL_FACILITATOR_URL', config.facilitatorUrl],
    ['TILL_BASE_RPC_URL', config.baseRpcUrl],
    ['TILL_BASE_URL', config.baseUrl],
    ['TILL_AUTH_URL', config.authUrl],
    ['TILL_MCP_URL', config.mcpUrl],
  ];
  for (const [name, url] of urls) {
    if (!url || url.startsWith('https://')) continue;
    if (config.devAllowHttpLoopback && LOOPBACK_HOSTS.has(new URL(url).hostname)) continue;
    throw new ConfigError(
      name,
      `${shownValue(name, url)} is plain http, refused in live mode: use an https URL${name === 'TILL_BASE_URL' ? ' (the address buyers and merchants reach, behind your TLS proxy)' : ''} (TILL_DEV_ALLOW_HTTP_LOOPBACK=true allows http to this machine, for development only)`,
    );
  }
}
