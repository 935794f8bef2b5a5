import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createPublicClient, getAddress, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { authorizationRequest } from '../chain/authorization.ts';
import { createFacilitator, describeProblem, FacilitatorError, facilitatorAuthHeaders } from '../chain/facilitator.ts';
import { createChainReader, LOG_RANGE_BLOCKS } from '../chain/reader.ts';
import { refundTypedData } from '../chain/refunds.ts';
import { type ChainReadError, chainReadError, isRpcFailure } from '../chain/rpc-errors.ts';
import { BASE, BASE_USDC_ADDRESS, CHAIN_ID, NETWORK_V2, USDC_DOMAIN } from '../common/network.ts';
import { type Config, ConfigError } from '../config.ts';
import type { Db } from '../db/index.ts';
import { pendingMigrations } from '../db/migrate.ts';
import { listMerchants } from '../merchants/merchants.ts';
import { plainHttpEndpoints } from '../webhooks/endpoints.ts';
import { FACILITATOR_MIN_AMOUNT } from '../x402/protocol.ts';
import type { LiveReadiness } from './live.ts';

/** One line of `till doctor`: what was checked, what was found, and the fix when it failed. */
export type Check = { name: string; status: 'ok' | 'failed' | 'skipped'; detail: string; fix?: string; setting?: string };

const ok = (name: string, detail: string): Check => ({ name, status: 'ok', detail });
const failed = (name: string, detail: string, fix: string): Check => ({ name, status: 'failed', detail, fix });
const skipped = (name: string, detail: string): Check => ({ name, status: 'skipped', detail });

/** A head older than this is a node that stopped following Base (a block every 2 s). */
const STALE_HEAD_SECONDS = 120;

const tokenAbi = parseAbi(['function name() view returns (string)', 'function version() view returns (string)']);

function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]!.slice(0, 300);
}

function rpcClient(url: string) {
  return createPublicClient({ transport: http(url, { timeout: 10_000, retryCount: 0 }) });
}

/**
 * A check failed by a read of `what` at the RPC: the detail names the RPC as `https://host/…` only
 * (its URL holds the provider's key), the fix says what to change: the key, the plan, or reaching
 * the provider at all.
 */
function rpcFailed(name: string, error: unknown, what: string, rpcUrl: string, fix?: (failure: ChainReadError) => string | undefined): Check {
  const failure = chainReadError(error, what, rpcUrl);
  const refusedKey = failure.status === 401 || failure.status === 403;
  return failed(
    name,
    failure.message.slice(0, 400),
    fix?.(failure) ??
      (refusedKey
        ? "the provider refused the request: check the key in TILL_BASE_RPC_URL (the provider's dashboard shows the whole URL) and that the plan is active"
        : failure.status === 429
          ? "the provider limits this key's requests: use a plan with more (TILL_BASE_RPC_URL), or wait and run till doctor again"
          : 'check TILL_BASE_RPC_URL (the https JSON-RPC URL of a Base mainnet node, with its key) and that the provider answers from this server'),
  );
}

/** The facilitator settles `exact` on Base, for the configured token when it names its assets. */
export async function checkFacilitatorSupported(config: Config): Promise<Check> {
  const name = 'facilitator supports exact on Base';
  if (!config.facilitatorUrl) return skipped(name, 'no facilitator configured (the sandbox starts its own)');
  const facilitator = createFacilitator({ url: config.facilitatorUrl, auth: config.facilitator, headers: config.facilitatorHeaders, settleTimeoutMs: 10_000 });
  let kinds: { x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }[];
  try {
    kinds = (await facilitator.supported()).kinds;
  } catch (error) {
    return failed(
      name,
      `GET ${config.facilitatorUrl}/supported failed: ${reason(error)}`,
      'check TILL_FACILITATOR_URL (or TILL_FACILITATOR=coinbase) and that the facilitator is reachable from this server',
    );
  }
  const listed = kinds.map((kind) => `${kind.scheme}@${kind.network}(v${kind.x402Version})`).join(', ') || 'none';
  const base = kinds.filter((kind) => kind.scheme === 'exact' && kind.network === NETWORK_V2);
  if (base.length === 0)
    return failed(name, `it settles ${listed}, not exact on ${NETWORK_V2}`, 'use a facilitator that settles USDC on Base mainnet (TILL_FACILITATOR=coinbase)');
  const assets = base.flatMap((kind) => {
    const named = kind.extra?.assets ?? kind.extra?.asset;
    return Array.isArray(named) ? named.map(String) : typeof named === 'string' ? [named] : [];
  });
  if (assets.length > 0 && config.usdcAddress && !assets.some((asset) => asset.toLowerCase() === config.usdcAddress!.toLowerCase()))
    return failed(
      name,
      `it settles exact on ${NETWORK_V2} for ${assets.join(', ')}, not ${config.usdcAddress}`,
      'set TILL_USDC_ADDRESS to a token the facilitator settles',
    );
  return ok(name, `it settles ${listed}`);
}

/**
 * The facilitator answers a verify with the configured credentials: a well-formed payment of the
 * facilitator's smallest amount, signed by a throwaway key that holds nothing, must get a verdict
 * (it is refused: insufficient funds), not a refusal of the request. Nothing is paid. A key that
 * cannot sign at all, refused credentials, a refused account and an unreachable facilitator each
 * name their own fix.
 */
export async function checkFacilitatorCredentials(config: Config): Promise<Check> {
  const name = 'facilitator accepts the credentials';
  if (!config.facilitatorUrl) return skipped(name, 'no facilitator configured');
  const keyFix =
    config.facilitator.kind === 'coinbase'
      ? 'check CDP_API_KEY_ID and CDP_API_KEY_SECRET (a Secret API key from portal.cdp.coinbase.com, not a client key)'
      : 'check TILL_FACILITATOR_HEADERS';
  try {
    await facilitatorAuthHeaders(config.facilitatorUrl, config.facilitator, config.facilitatorHeaders)?.('verify');
  } catch (error) {
    return failed(
      name,
      `the API key cannot sign a request: ${reason(error)}`,
      'paste the whole secret of the CDP Secret API key into CDP_API_KEY_SECRET again (Ed25519: base64 of 64 bytes; ECDSA: the PEM with its BEGIN and END lines)',
    );
  }
  const facilitator = createFacilitator({ url: config.facilitatorUrl, auth: config.facilitator, headers: config.facilitatorHeaders, settleTimeoutMs: 10_000 });
  const request = await throwawayPayment(config.usdcAddress ?? BASE_USDC_ADDRESS, config.baseUrl);
  try {
    const verdict = await facilitator.verify(request.payload, request.requirements);
    const said = verdict.isValid ? 'valid' : `refused (${verdict.invalidReason})`;
    return ok(name, `POST /verify of a payment by a key holding nothing was answered: ${said} — authenticated, nothing paid`);
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    const { problem } = error;
    const detail = `POST /verify: ${describeProblem(problem)}`;
    if (problem.status === 401 || problem.status === 403) return failed(name, `${detail}: the credentials were refused`, keyFix);
    if (problem.kind === 'refused')
      return failed(
        name,
        detail,
        'the facilitator refuses this account or request: read its errorMessage; for Coinbase, check the CDP project and its billing at portal.cdp.coinbase.com',
      );
    return failed(name, detail, 'check that the facilitator is reachable from this server (TILL_FACILITATOR_URL)');
  }
}

/** A payment of the facilitator's smallest amount, signed by a fresh key that holds nothing: a verify of it pays nothing. */
async function throwawayPayment(asset: string, baseUrl: string) {
  const signer = privateKeyToAccount(generatePrivateKey());
  const message = {
    from: signer.address,
    to: signer.address,
    value: FACILITATOR_MIN_AMOUNT,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 300),
    nonce: `0x${randomBytes(32).toString('hex')}` as const,
  };
  const signature = await signer.signTypedData(refundTypedData(asset, message, BASE));
  return authorizationRequest(
    { ...message, asset, signature },
    { url: `${baseUrl}/doctor`, description: 'till doctor: a check of the credentials, nothing is paid' },
    BASE,
  );
}

/** The RPC is Base mainnet; with `headAge`, also how old its newest block is. */
export async function checkRpcChain(config: Config, options: { headAge?: boolean } = {}): Promise<Check[]> {
  const name = 'RPC is Base mainnet';
  if (!config.baseRpcUrl) return [skipped(name, 'TILL_BASE_RPC_URL is not set')];
  const client = rpcClient(config.baseRpcUrl);
  let chainId: number;
  try {
    chainId = await client.getChainId();
  } catch (error) {
    return [rpcFailed(name, error, 'eth_chainId', config.baseRpcUrl)];
  }
  if (chainId !== CHAIN_ID)
    return [failed(name, `TILL_BASE_RPC_URL answers chain id ${chainId}, not Base mainnet (${CHAIN_ID})`, 'point TILL_BASE_RPC_URL at a Base mainnet node')];
  const checks = [ok(name, `chain id ${chainId}`)];
  if (options.headAge) {
    const headName = 'RPC follows the chain';
    try {
      const head = await client.getBlock({ blockTag: 'latest' });
      const age = Math.max(0, Math.round(Date.now() / 1000 - Number(head.timestamp)));
      checks.push(
        age <= STALE_HEAD_SECONDS
          ? ok(headName, `head block ${head.number} is ${age} s old`)
          : failed(
              headName,
              `head block ${head.number} is ${age} s old (Base makes one every 2 s)`,
              'the node is not syncing: use another Base RPC in TILL_BASE_RPC_URL',
            ),
      );
    } catch (error) {
      checks.push(rpcFailed(headName, error, 'eth_getBlockByNumber latest', config.baseRpcUrl));
    }
  }
  return checks;
}

/** The token's EIP-712 domain, read from the chain, is what Till puts in every challenge's `extra`. */
export async function checkTokenDomain(config: Config): Promise<Check> {
  const name = "token's EIP-712 domain";
  if (!config.baseRpcUrl || !config.usdcAddress) return skipped(name, 'needs TILL_BASE_RPC_URL to read the token');
  const client = rpcClient(config.baseRpcUrl);
  const address = config.usdcAddress as `0x${string}`;
  try {
    const [tokenName, version] = await Promise.all([
      client.readContract({ address, abi: tokenAbi, functionName: 'name' }),
      client.readContract({ address, abi: tokenAbi, functionName: 'version' }),
    ]);
    if (tokenName !== USDC_DOMAIN.name || version !== USDC_DOMAIN.version)
      return failed(
        name,
        `the token at TILL_USDC_ADDRESS ${address} says name "${tokenName}", version "${version}"; Till's challenges say "${USDC_DOMAIN.name}", "${USDC_DOMAIN.version}", so every buyer's signature would be refused`,
        'set TILL_USDC_ADDRESS to USDC on Base (0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913)',
      );
    return ok(name, `"${tokenName}", version "${version}" at ${address}`);
  } catch (error) {
    const what = `reading name() and version() of ${address}`;
    // The RPC failing the read says nothing of the token: the fix is the RPC's.
    if (isRpcFailure(error)) return { ...rpcFailed(name, error, what, config.baseRpcUrl), setting: 'TILL_BASE_RPC_URL' };
    return rpcFailed(name, error, what, config.baseRpcUrl, () => 'set TILL_USDC_ADDRESS to USDC on Base (0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913)');
  }
}

/** A lost settle answer is found through eth_getLogs: how many blocks the RPC answers per request (the reader narrows to them). */
export async function checkRpcLogRange(config: Config): Promise<Check> {
  const name = 'RPC eth_getLogs range';
  if (!config.baseRpcUrl) return skipped(name, 'TILL_BASE_RPC_URL is not set');
  const reader = createChainReader(config.baseRpcUrl);
  let blocks: bigint;
  try {
    blocks = await reader.probeLogRange(config.usdcAddress ?? BASE_USDC_ADDRESS);
  } catch (error) {
    // An RPC that answers, but not eth_getLogs (not even over one block), is the plan's doing, not the key's.
    return rpcFailed(name, error, 'eth_getLogs', config.baseRpcUrl, (failure) =>
      failure.code !== undefined && ![401, 403, 429].includes(failure.status ?? 200)
        ? 'use a Base RPC (or a plan) that answers eth_getLogs, in TILL_BASE_RPC_URL: the reconciler finds a payment whose settle answer was lost through it'
        : undefined,
    );
  }
  const perLook = (LOG_RANGE_BLOCKS + blocks - 1n) / blocks;
  return ok(
    name,
    blocks < LOG_RANGE_BLOCKS
      ? `${blocks} blocks per request: the RPC refused ${LOG_RANGE_BLOCKS}, so the reconciler searches in ${blocks}-block ranges (${perLook} requests for ${LOG_RANGE_BLOCKS} blocks, about 17 minutes of Base)`
      : `${blocks} blocks per request`,
  );
}

/** What a live start asks of the facilitator and the chain before it serves; any failure refuses the start. */
export async function liveStartChecks(config: Config): Promise<Check[]> {
  const [facilitator, chain, logRange, token] = await Promise.all([
    checkFacilitatorSupported(config),
    checkRpcChain(config),
    checkRpcLogRange(config),
    checkTokenDomain(config),
  ]);
  return [
    { ...facilitator, setting: config.facilitator.kind === 'coinbase' ? 'TILL_FACILITATOR' : 'TILL_FACILITATOR_URL' },
    ...chain.map((check) => ({ ...check, setting: 'TILL_BASE_RPC_URL' })),
    { ...logRange, setting: 'TILL_BASE_RPC_URL' },
    { ...token, setting: token.setting ?? 'TILL_USDC_ADDRESS' },
  ];
}

/** The first failed start check as a refusal naming its setting, with the fix. */
export function startRefusal(checks: Check[]): ConfigError | undefined {
  const first = checks.find((check) => check.status === 'failed');
  if (!first) return undefined;
  return new ConfigError(
    first.setting ?? 'TILL_FACILITATOR_URL',
    `live mode refused to start: ${first.name} — ${first.detail}. Fix: ${first.fix}. (till doctor checks every setting.)`,
  );
}

export function publicUrlCheck(config: Config): Check {
  const name = 'TILL_BASE_URL is https';
  if (config.baseUrl.startsWith('https://')) return ok(name, config.baseUrl);
  if (config.mode === 'sandbox') return skipped(name, `${config.baseUrl} (plain http is fine in the sandbox)`);
  return failed(name, `${config.baseUrl} is plain http`, 'serve behind a TLS proxy and set TILL_BASE_URL to its https address');
}

export async function databaseChecks(config: Config, db: Db): Promise<Check[]> {
  let pending: string[];
  try {
    pending = await pendingMigrations(db);
  } catch (error) {
    return [failed('database reachable', `${config.databaseKind}: ${reason(error)}`, 'check TILL_DATABASE_URL and that the database is up')];
  }
  return [
    ok('database reachable', config.databaseKind === 'sqlite' ? `SQLite at ${config.sqlitePath}` : 'PostgreSQL'),
    pending.length === 0
      ? ok('database migrated', 'every migration has run')
      : failed('database migrated', `${pending.length} migrations to run: ${pending.join(', ')}`, 'run till migrate'),
  ];
}

export function secretKeyCheck(config: Config, env: NodeJS.ProcessEnv): Check {
  const name = 'secret key present';
  if (env.TILL_SECRET_KEY) return ok(name, 'TILL_SECRET_KEY is set');
  const file = join(config.dataDir, 'secret.key');
  if (existsSync(file)) return ok(name, `kept in ${file}: back it up with the database`);
  return failed(name, 'no TILL_SECRET_KEY', 'set TILL_SECRET_KEY (openssl rand -hex 32) and keep it with your database backups');
}

/** Every merchant's payout wallet is set and written checksummed (a typo in a mixed-case address fails its checksum). */
export async function payoutWalletChecks(db: Db): Promise<Check> {
  const name = "merchants' payout wallets";
  const merchants = await listMerchants(db);
  if (merchants.length === 0) return failed(name, 'no merchant yet', 'create one: till merchant create --name "Your shop" --wallet 0x…');
  const unset = merchants.filter((m) => !m.wallets.live).map((m) => m.id);
  const unchecked = merchants.filter((m) => m.wallets.live && !isChecksummed(m.wallets.live)).map((m) => m.id);
  if (unset.length || unchecked.length)
    return failed(
      name,
      [unset.length ? `no wallet: ${unset.join(', ')}` : '', unchecked.length ? `not checksummed: ${unchecked.join(', ')}` : ''].filter(Boolean).join('; '),
      'till merchant set-wallet MERCHANT_ID 0x… (paste the address from the wallet itself)',
    );
  return ok(name, `${merchants.length} merchant${merchants.length === 1 ? '' : 's'}, each with a checksummed wallet`);
}

function isChecksummed(address: string): boolean {
  try {
    return getAddress(address) === address;
  } catch {
    return false;
  }
}

/** What `till live prepare` clears: a live start on a database still holding sandbox data is refused. */
export function sandboxDataCheck(readiness: LiveReadiness): Check {
  const name = 'no sandbox data in the way';
  const { demoPayoutKey, demoWalletMerchants } = readiness;
  const inDatabase = [
    readiness.payableSandboxSessions ? `${readiness.payableSandboxSessions} payable sandbox session${readiness.payableSandboxSessions === 1 ? '' : 's'}` : '',
    readiness.demoUser ? 'the sandbox demo user' : '',
    demoWalletMerchants.length ? `merchant ${demoWalletMerchants.join(', ')} paid out to the sandbox demo wallet ${readiness.demoWallet}` : '',
  ].filter(Boolean);
  const found = [
    inDatabase.length ? `this database holds ${inDatabase.join(' and ')}` : '',
    demoPayoutKey ? `the data folder holds the sandbox demo payout key ${demoPayoutKey}` : '',
  ].filter(Boolean);
  if (found.length === 0) return ok(name, 'no payable sandbox session, no demo user, no demo payout key');
  return failed(
    name,
    found.join('; '),
    'run till live prepare with the live settings: it archives them, deletes the demo payout key and clears the wallet of a merchant paid out to it (nothing made in the sandbox is ever served or paid to in live mode)',
  );
}

export function sandboxDataRefusal(readiness: LiveReadiness): ConfigError | undefined {
  const check = sandboxDataCheck(readiness);
  if (check.status !== 'failed') return undefined;
  return new ConfigError('TILL_DATABASE_URL', `live mode refused to start: ${check.detail}. Fix: ${check.fix}.`);
}

/** Live webhook endpoints are https: nothing is delivered to another (the check runs at every delivery too). */
export async function webhookUrlCheck(db: Db): Promise<Check> {
  const name = 'webhook endpoints https';
  const plain = await plainHttpEndpoints(db, 'live');
  if (plain.length === 0) return ok(name, 'every live webhook endpoint is https (or none is set)');
  return failed(
    name,
    `${plain.map((endpoint) => `${endpoint.merchantId} → ${endpoint.url}`).join(', ')}: nothing is delivered there`,
    'till merchant set-webhook MERCHANT_ID --url https://… (or in the dashboard, Notifications)',
  );
}
