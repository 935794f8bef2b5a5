import { getAddress, zeroAddress } from 'viem';
import { invalidField, TillError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import { SUPPORTED_CHAINS } from '../common/network.ts';
import type { Db } from '../db/index.ts';

/** A chain a merchant accepts and the tokens it accepts on it. */
export type AcceptedChain = { chain: string; tokens: string[] };

export type Merchant = {
  id: string;
  name: string;
  /** The payout wallet of each mode: where its payments go (null: nowhere yet). Test money may go to any address; live money only to the live one. */
  wallets: Record<Mode, string | null>;
  createdAt: number;
  acceptedChains: AcceptedChain[];
  supportEmail: string | null;
  websiteUrl: string | null;
};

/** What a new merchant accepts: every supported chain with every token on it (today USDC on Base). */
export function defaultAcceptedChains(): AcceptedChain[] {
  return Object.entries(SUPPORTED_CHAINS).map(([chain, tokens]) => ({ chain, tokens: [...tokens] }));
}

/** The path of the payment-session API (E1, E2 and the read), under the service's base URL. */
export const PAYMENT_API_BASE_PATH = '/api/checkout/v2';

export const WALLET_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The column of each mode's payout wallet. Every reader of a payout wallet takes the one of the
 * mode of what is paid (the session's, the credential's), never the other.
 */
export const WALLET_COLUMN = { live: 'wallet_address', sandbox: 'test_wallet_address' } as const satisfies Record<Mode, string>;

/** The payout wallet of `mode` in a row read with both wallet columns. */
export const walletOf = (row: { wallet_address: string | null; test_wallet_address: string | null }, mode: Mode): string | null => row[WALLET_COLUMN[mode]];

/**
 * A typed payout address in its checksummed (EIP-55) form, as every page and command shows it, or why
 * it is refused: all one case carries no checksum; mixed case must be the EIP-55 one; never the zero address.
 */
export function checkPayoutAddress(typed: string): { address: string } | { problem: string } {
  if (!WALLET_ADDRESS.test(typed)) return { problem: 'is not an address: 0x followed by 40 hexadecimal characters' };
  const hex = typed.slice(2);
  if (hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && getAddress(typed) !== typed)
    return { problem: 'has capitals that do not match its EIP-55 checksum: check it for a typo, or paste it exactly as your wallet shows it' };
  const address = getAddress(typed);
  if (address === zeroAddress) return { problem: 'is the zero address, whose money nobody can ever spend' };
  return { address };
}

/** Stored addresses are shown checksummed, also those saved in lower case before addresses were normalised. */
const checksummed = (address: string | null) => (address !== null && WALLET_ADDRESS.test(address) ? getAddress(address) : address);

/** What a merchant without a payout wallet is told wherever it acts, with the command that fixes it. */
export function noWalletWarning(merchantId: string): string {
  return `merchant ${merchantId} has no payout wallet, so its sessions cannot be paid (x402 answers 422 no_pay_to) until one is set in the dashboard under Settings → Payout wallet (/dashboard/settings); an operator can also run: till merchant set-wallet ${merchantId} 0xYourAddress`;
}

export async function createMerchant(
  db: Db,
  input: { name: string; wallets?: Partial<Record<Mode, string | null>>; acceptedChains?: AcceptedChain[] },
  now = Date.now(),
): Promise<Merchant> {
  const acceptedChains = input.acceptedChains ? checkAcceptedChains(input.acceptedChains) : defaultAcceptedChains();
  const merchant: Merchant = {
    id: newId('mer_'),
    name: input.name,
    wallets: { sandbox: input.wallets?.sandbox ?? null, live: input.wallets?.live ?? null },
    createdAt: now,
    acceptedChains,
    supportEmail: null,
    websiteUrl: null,
  };
  await db
    .insertInto('merchants')
    .values({
      id: merchant.id,
      name: merchant.name,
      [WALLET_COLUMN.live]: merchant.wallets.live,
      [WALLET_COLUMN.sandbox]: merchant.wallets.sandbox,
      created_at: now,
      accepted_chains: JSON.stringify(acceptedChains),
    })
    .execute();
  return merchant;
}

type MerchantRow = {
  id: string;
  name: string;
  wallet_address: string | null;
  test_wallet_address: string | null;
  created_at: number;
  accepted_chains: string;
  support_email: string | null;
  website_url: string | null;
};

function merchantOf(row: MerchantRow): Merchant {
  return {
    id: row.id,
    name: row.name,
    wallets: { sandbox: checksummed(row.test_wallet_address), live: checksummed(row.wallet_address) },
    createdAt: row.created_at,
    acceptedChains: parseAcceptedChains(row.accepted_chains),
    supportEmail: row.support_email,
    websiteUrl: row.website_url,
  };
}

/** The stored JSON of `accepted_chains`; anything unreadable counts as accepting nothing rather than failing the merchant's every request. */
function parseAcceptedChains(text: string): AcceptedChain[] {
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.flatMap((entry) =>
      entry && typeof entry.chain === 'string' && Array.isArray(entry.tokens)
        ? [{ chain: entry.chain, tokens: entry.tokens.filter((token: unknown): token is string => typeof token === 'string') }]
        : [],
    );
  } catch {
    return [];
  }
}

export async function findMerchant(db: Db, id: string): Promise<Merchant | undefined> {
  const row = await db.selectFrom('merchants').selectAll().where('id', '=', id).executeTakeFirst();
  return row && merchantOf(row);
}

/** The chains a merchant accepts and the tokens on each. */
export function acceptedChains(merchant: Pick<Merchant, 'acceptedChains'>): AcceptedChain[] {
  return merchant.acceptedChains.map((entry) => ({ chain: entry.chain, tokens: [...entry.tokens] }));
}

/**
 * Checks chains and tokens against what Till supports (`SUPPORTED_CHAINS`) and returns them in
 * canonical form (chain names lower case, token symbols upper case). Each chain once, at least one
 * token on each, at least one chain; an unsupported chain or token is refused by name.
 */
export function checkAcceptedChains(chains: readonly { chain: string; tokens: readonly string[] }[], field = 'acceptedChains'): AcceptedChain[] {
  if (chains.length === 0) throw new TillError('invalid_field', { field, problem: 'must name at least one chain' });
  const supportedNames = Object.keys(SUPPORTED_CHAINS);
  const seen = new Set<string>();
  return chains.map((entry, index) => {
    const chain = entry.chain.trim().toLowerCase();
    const supported = SUPPORTED_CHAINS[chain];
    if (!supported || !Object.hasOwn(SUPPORTED_CHAINS, chain))
      throw new TillError('unsupported_chain', { field: `${field}[${index}].chain`, chain: entry.chain, accepted: supportedNames });
    if (seen.has(chain)) throw new TillError('invalid_field', { field: `${field}[${index}].chain`, problem: `names ${chain} twice` });
    seen.add(chain);
    if (entry.tokens.length === 0) throw new TillError('invalid_field', { field: `${field}[${index}].tokens`, problem: 'must name at least one token' });
    const tokens = [...new Set(entry.tokens.map((token) => token.trim().toUpperCase()))];
    const unsupported = tokens.findIndex((token) => !supported.includes(token));
    if (unsupported >= 0)
      throw new TillError('unsupported_token', {
        field: `${field}[${index}].tokens[${unsupported}]`,
        chain,
        token: entry.tokens[unsupported]!,
        accepted: [...supported],
      });
    return { chain, tokens };
  });
}

/** Sets the chains and tokens a merchant accepts, refusing any Till does not support. False when there is no such merchant. */
export async function setAcceptedChains(db: Db, id: string, chains: readonly { chain: string; tokens: readonly string[] }[]): Promise<boolean> {
  const checked = checkAcceptedChains(chains);
  const result = await db
    .updateTable('merchants')
    .set({ accepted_chains: JSON.stringify(checked) })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export type PaymentSettings = {
  merchantId: string;
  businessName: string;
  /** Whether a payout wallet is set at all (the address itself is never shown here). */
  payoutAddressConfigured: boolean;
  chains: { name: string; tokens: string[]; payoutAddressConfigured: boolean }[];
  apiBasePath: string;
  apiBaseUrl: string;
};

/**
 * What a merchant's payment settings show to tools (the MCP server's get_payment_settings and its
 * quickstart): business name, accepted chains and tokens, and per chain only whether a payout
 * address is configured — never the address.
 */
export async function paymentSettings(db: Db, merchantId: string, mode: Mode, options: { baseUrl: string }): Promise<PaymentSettings | undefined> {
  const merchant = await findMerchant(db, merchantId);
  if (!merchant) return undefined;
  const configured = merchant.wallets[mode] !== null;
  return {
    merchantId: merchant.id,
    businessName: merchant.name,
    payoutAddressConfigured: configured,
    // One EVM address serves every supported chain, so each chain shows the same answer.
    chains: merchant.acceptedChains.map((entry) => ({ name: entry.chain, tokens: [...entry.tokens], payoutAddressConfigured: configured })),
    apiBasePath: PAYMENT_API_BASE_PATH,
    apiBaseUrl: options.baseUrl + PAYMENT_API_BASE_PATH,
  };
}

export type BusinessDetails = { name: string; supportEmail: string | null; websiteUrl: string | null };

export const BUSINESS_NAME_MAX_LENGTH = 100;
const SUPPORT_EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Checks business details as typed in a form (blank optional fields become null) and returns them
 * trimmed; the first problem is an `invalid_field` naming its field (`name`, `supportEmail`, `websiteUrl`).
 */
export function checkBusinessDetails(input: { name: string; supportEmail: string; websiteUrl: string }): BusinessDetails {
  const name = input.name.trim();
  if (!name) throw invalidField('name', 'must not be empty');
  if (name.length > BUSINESS_NAME_MAX_LENGTH) throw invalidField('name', `must be at most ${BUSINESS_NAME_MAX_LENGTH} characters`);
  const supportEmail = input.supportEmail.trim() || null;
  if (supportEmail !== null && (supportEmail.length > 254 || !SUPPORT_EMAIL.test(supportEmail))) throw invalidField('supportEmail', 'is not an email address');
  const websiteUrl = input.websiteUrl.trim() || null;
  if (websiteUrl !== null) {
    let url: URL | undefined;
    try {
      url = new URL(websiteUrl);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || websiteUrl.length > 2048)
      throw invalidField('websiteUrl', 'must be an http or https address, such as https://shop.example');
    if (url.username || url.password) throw invalidField('websiteUrl', 'must not carry a user name or password');
  }
  return { name, supportEmail, websiteUrl };
}

/** Sets a merchant's business details, checked first (nothing is saved when one is refused). False when there is no such merchant. */
export async function setBusinessDetails(db: Db, id: string, input: { name: string; supportEmail: string; websiteUrl: string }): Promise<boolean> {
  const details = checkBusinessDetails(input);
  const result = await db
    .updateTable('merchants')
    .set({ name: details.name, support_email: details.supportEmail, website_url: details.websiteUrl })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The payout wallet of a mode is set only by the operator or the dashboard, never over the payment API (null: paid out nowhere). */
export async function setMerchantWallet(db: Db, id: string, mode: Mode, walletAddress: string | null): Promise<boolean> {
  const result = await db
    .updateTable('merchants')
    .set({ [WALLET_COLUMN[mode]]: walletAddress })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The merchants whose payout wallet of `mode` is an address (however its case was stored), oldest first. */
export async function merchantsPaidTo(db: Db, address: string, mode: Mode): Promise<string[]> {
  const rows = await db
    .selectFrom('merchants')
    .select('id')
    .where((eb) => eb(eb.fn('lower', [WALLET_COLUMN[mode]]), '=', address.toLowerCase()))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}

export async function countMerchants(db: Db): Promise<number> {
  const row = await db
    .selectFrom('merchants')
    .select((eb) => eb.fn.countAll<number | bigint>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export type MerchantSummary = Merchant & { keys: { keyId: string; mode: 'test' | 'live'; lastFour: string; createdAt: number }[] };

/** Every merchant, oldest first, with its active API keys (ids and last four characters, never the keys). */
export async function listMerchants(db: Db): Promise<MerchantSummary[]> {
  const merchants = await db.selectFrom('merchants').selectAll().orderBy('created_at').orderBy('id').execute();
  const keys = await db
    .selectFrom('api_keys')
    .select(['id', 'merchant_id', 'mode', 'last_four', 'created_at'])
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .execute();
  return merchants.map((row) => ({
    ...merchantOf(row),
    keys: keys
      .filter((key) => key.merchant_id === row.id)
      .map((key) => ({ keyId: key.id, mode: key.mode, lastFour: key.last_four, createdAt: key.created_at })),
  }));
}

/** Turns on or off the merchant's rule that every user signs in with a second factor. */
export async function setRequireTwoFactor(db: Db, merchantId: string, required: boolean): Promise<void> {
  await db
    .updateTable('merchants')
    .set({ require_two_factor: required ? 1 : 0 })
    .where('id', '=', merchantId)
    .execute();
}
