import type { Insertable } from 'kysely';
import { getAddress } from 'viem';
import { invalidField, TillError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import type { Mode, OrderType, PaymentSessionsTable, SessionOrigin } from '../db/schema.ts';
import { addReceiptAddress } from '../mail/receipt-addresses.ts';
import { type AcceptedChain, findMerchant, WALLET_ADDRESS } from '../merchants/merchants.ts';
import { runIdempotently, storedIdempotencyKey } from './idempotency.ts';
import { insertSession } from './sessions.ts';
import { checkTerms, parseMoney, parseQuotableCurrency } from './terms.ts';
import { payabilityWarnings, type SessionWarning, sessionCreatedBody } from './views.ts';

/** A chain the session is paid on, the tokens it takes there, and optionally where that one payment goes. */
export type SessionChainInput = { name: string; tokens: string[]; publicAddress?: string | null };

/**
 * What a new session is made of: the fields of E1, and for callers other than E1 (the MCP tool
 * create_payment_session) `chains`. Money is a number or the exact decimal text of one (E1 passes
 * the digits the client sent, so nothing goes through a float).
 */
export type NewSessionInput = {
  amount: number | string;
  currency: string;
  orderType?: OrderType | null;
  editable?: boolean | null;
  minAmount?: number | string | null;
  orderId?: string | null;
  concept?: string | null;
  successUrl?: string | null;
  cancelUrl?: string | null;
  failUrl?: string | null;
  /** Where the buyer's receipts are mailed (kept in the mail module's table, never on the session row). */
  buyerEmail?: string | null;
  chains?: SessionChainInput[] | null;
};

export type CreateSessionOptions = {
  /** Who is creating it: E1 (`api`), a dashboard payment link (`dashboard`) or the MCP tool (`mcp`); stored on the session. */
  createdVia: SessionOrigin;
  /** The mode of the credential creating it (the API key's, the grant's, the dashboard's view): the session's for good. */
  mode: Mode;
  /** Makes retries safe, as E1's Idempotency-Key header. */
  idempotencyKey?: string;
  /** What the idempotency key is bound to (E1: the request body); `input` unless given. */
  requestBody?: unknown;
  /** Whether the merchant has a payout wallet, when the caller knows it already (E1 learns it with the API key); read otherwise. */
  walletConfigured?: boolean;
  /**
   * Written in the session's own transaction, so both are committed or neither (the MCP tool's
   * audit row): a crash can never leave the session without it.
   */
  alsoInTransaction?: (trx: Db) => Promise<void>;
};

export type SessionCreatedResult = { sessionId: string; redirectUrl: string; warnings?: SessionWarning[] };

type Context = Pick<AppContext, 'config' | 'db' | 'dbKind' | 'metrics' | 'now' | 'rates'>;

/**
 * The session's chains checked against what the merchant accepts: each chain accepted, each token
 * accepted on it, each chain once. Answers the destination address of this one session, if any
 * chain names one (all must agree: a session has one payTo).
 */
export function checkSessionChains(chains: readonly SessionChainInput[], accepted: readonly AcceptedChain[]): { payTo: string | null } {
  if (chains.length === 0) throw invalidField('chains', 'must name at least one chain');
  const seen = new Set<string>();
  let payTo: string | null = null;
  chains.forEach((entry, index) => {
    const field = `chains[${index}]`;
    const name = entry.name.trim().toLowerCase();
    const acceptedChain = accepted.find((candidate) => candidate.chain === name);
    if (!acceptedChain)
      throw new TillError('unsupported_chain', { field: `${field}.name`, chain: entry.name, accepted: accepted.map((candidate) => candidate.chain) });
    if (seen.has(name)) throw invalidField(`${field}.name`, `names ${name} twice`);
    seen.add(name);
    if (entry.tokens.length === 0) throw invalidField(`${field}.tokens`, 'must name at least one token');
    entry.tokens.forEach((token, tokenIndex) => {
      if (!acceptedChain.tokens.includes(token.trim().toUpperCase()))
        throw new TillError('unsupported_token', { field: `${field}.tokens[${tokenIndex}]`, chain: name, token, accepted: acceptedChain.tokens });
    });
    if (entry.publicAddress != null) {
      if (!WALLET_ADDRESS.test(entry.publicAddress)) throw invalidField(`${field}.publicAddress`, 'must be a 0x address of 40 hex digits');
      const address = getAddress(entry.publicAddress.toLowerCase());
      if (payTo !== null && payTo !== address) throw invalidField(`${field}.publicAddress`, 'must be the same on every chain: a session pays one address');
      payTo = address;
    }
  });
  return { payTo };
}

/**
 * Creates a payment session for a merchant: E1's body, and the MCP tool create_payment_session.
 * Checks the currency (quotable in USDC), the amounts (exact, in the currency's decimals), the terms
 * (`minAmount` only on an editable session, not above `amount`) and, when `chains` is given, the
 * chains and tokens against what the merchant accepts. A `publicAddress` is stored as this
 * session's payTo only: x402 then quotes and pays it, and nothing else changes.
 */
export async function createPaymentSession(
  context: Context,
  merchantId: string,
  input: NewSessionInput,
  options: CreateSessionOptions,
): Promise<SessionCreatedResult> {
  return JSON.parse(await createPaymentSessionJson(context, merchantId, input, options)) as SessionCreatedResult;
}

/** {@link createPaymentSession}'s answer as the JSON text of its 201 body (E1 sends it as it is). */
export async function createPaymentSessionJson(context: Context, merchantId: string, input: NewSessionInput, options: CreateSessionOptions): Promise<string> {
  const draft = await draftSession(context, input, options.createdVia, options.mode);

  let walletConfigured = options.walletConfigured;
  if (input.chains != null || walletConfigured === undefined) {
    const merchant = await findMerchant(context.db, merchantId);
    if (!merchant) throw new TillError('not_found', { what: `Merchant ${merchantId}` });
    walletConfigured = merchant.wallets[draft.mode] !== null;
    if (input.chains != null) draft.pay_to = checkSessionChains(input.chains, merchant.acceptedChains).payTo;
  }

  const { alsoInTransaction } = options;
  const buyerEmail = input.buyerEmail ?? null;
  const insert = async (trx: Db) => {
    await insertSession(trx, { ...draft, merchant_id: merchantId });
    if (buyerEmail !== null) await addReceiptAddress(trx, { sessionId: draft.id, paymentId: null }, buyerEmail, draft.created_at);
    await alsoInTransaction?.(trx);
    context.metrics.sessionsCreated.inc();
    return { status: 201, body: JSON.stringify(createdBody(context.config.baseUrl, draft, merchantId, walletConfigured === true)) };
  };

  const response = options.idempotencyKey
    ? await runIdempotently(
        context.db,
        context.dbKind,
        {
          merchantId,
          key: storedIdempotencyKey(options.idempotencyKey, options.mode),
          requestBody: options.requestBody === undefined ? input : options.requestBody,
          now: draft.created_at,
        },
        insert,
      )
    : alsoInTransaction || buyerEmail !== null
      ? await context.db.transaction().execute(insert)
      : await insert(context.db);
  return response.body;
}

/** Why a STATIC session takes no buyer's address: each of its payments would mail that one buyer. */
export const STATIC_BUYER_EMAIL = 'is taken on a TRANSIENT session only: a STATIC session is paid by many buyers';

/** A new session's row, all but its merchant: what the checks that need no database leave (pay_to is null until chains are checked). */
export type SessionDraft = Omit<Insertable<PaymentSessionsTable>, 'merchant_id'> & { id: string; created_at: number; pay_to: string | null };

/**
 * The checks of a new session that need no database: the currency (quotable in USDC), the amounts
 * (exact, in the currency's decimals) and the terms (`minAmount` only on an editable session, not
 * above `amount`). Answers the row to insert, with a new id.
 */
export async function draftSession(
  context: Pick<Context, 'config' | 'now' | 'rates'>,
  input: NewSessionInput,
  createdVia: SessionOrigin,
  mode: Mode,
): Promise<SessionDraft> {
  const { currency, exponent } = await parseQuotableCurrency(input.currency, context.rates);
  const amountMinor = parseMoney(input.amount, 'amount', exponent, currency);
  const editable = input.editable ?? false;
  const minAmountMinor = input.minAmount == null ? null : parseMoney(input.minAmount, 'minAmount', exponent, currency);
  checkTerms({ amountMinor, currency, minAmountMinor, editable });
  const now = context.now();
  const orderType = input.orderType ?? 'TRANSIENT';
  if (input.buyerEmail != null && orderType === 'STATIC') throw invalidField('buyerEmail', STATIC_BUYER_EMAIL);
  return {
    id: newId('ps_'),
    order_id: input.orderId ?? null,
    order_type: orderType,
    status: 'OPEN',
    amount_minor: amountMinor,
    currency,
    min_amount_minor: minAmountMinor,
    editable: editable ? 1 : 0,
    concept: input.concept ?? null,
    success_url: input.successUrl ?? null,
    cancel_url: input.cancelUrl ?? null,
    fail_url: input.failUrl ?? null,
    pay_to: null,
    expires_at: orderType === 'STATIC' ? null : now + context.config.sessionTtlSeconds * 1000,
    created_at: now,
    updated_at: now,
    version: 1,
    created_via: createdVia,
    // Of its credential's mode for good: nothing of the other mode ever sees it.
    mode,
  };
}

/** The 201 body of a new session, with the warning of a merchant whose sessions cannot be paid yet. */
export function createdBody(baseUrl: string, draft: Pick<SessionDraft, 'id' | 'pay_to'>, merchantId: string, walletConfigured: boolean): SessionCreatedResult {
  return sessionCreatedBody(baseUrl, draft.id, payabilityWarnings(merchantId, { walletConfigured, sessionPayTo: draft.pay_to }));
}
