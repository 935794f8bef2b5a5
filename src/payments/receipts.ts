import { getAddress } from 'viem';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import { BASE, BASE_SEPOLIA, NETWORK_V1, type Network, TOKEN_SYMBOL } from '../common/network.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { decimalNumber, formatMoney } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import { explorerUrl, type PaymentRow } from './payments.ts';

/** Receipts of settled orders (E4, and the MCP tool get_receipt) and the merchant's list of paid orders. */
export const Receipt = z
  .object({
    publicOrderId: z.string(),
    status: z.enum(['SUCCESS', 'REVERSED']),
    paymentSessionId: z.string(),
    orderId: z.string().nullable(),
    merchantName: z.string(),
    amount: z.number(),
    currency: z.string(),
    token: z.literal(TOKEN_SYMBOL),
    tokenAmount: z.string().meta({ description: 'USDC paid, as a decimal string' }),
    rate: z.string().meta({ description: 'USDC per one unit of the currency, as used for this order' }),
    network: z.enum([BASE.v1, BASE_SEPOLIA.v1]).meta({ description: 'Where it was paid: `base`, or `base-sepolia` for a test-mode payment on Base Sepolia' }),
    chainId: z.union([z.literal(BASE.chainId), z.literal(BASE_SEPOLIA.chainId)]),
    payer: z.string(),
    payTo: z.string(),
    transactionHash: z.string(),
    explorerUrl: z.string(),
    settledAt: z.string(),
    refundedAmount: z.number().meta({ description: "What the merchant refunded to the payer (refunds that succeeded), in the order's currency; 0 when none" }),
    refundedTokenAmount: z.string().meta({ description: 'The same in USDC, as a decimal string' }),
    refunds: z
      .array(
        z.object({
          id: z.string(),
          amount: z.number(),
          tokenAmount: z.string(),
          transactionHash: z.string(),
          explorerUrl: z.string(),
          refundedAt: z.string(),
        }),
      )
      .meta({ description: "The refunds that succeeded, from the merchant's payout wallet to the payer, oldest first" }),
  })
  .meta({ id: 'OrderReceipt' });

export type ReceiptView = z.infer<typeof Receipt>;

/** `TX-…` in canonical form, whether or not the prefix was given, in any case. */
export function normalizePublicOrderId(publicOrderId: string): string {
  return publicOrderId.toUpperCase().startsWith('TX-') ? `TX-${publicOrderId.slice(3).toUpperCase()}` : `TX-${publicOrderId.toUpperCase()}`;
}

/** Which orders a receipt is looked for among: those of `modes`, each linked to its mode's explorer; only the merchant's own with `merchantId`. */
export type ReceiptScope = { modes: readonly Mode[]; explorerTxUrl: (mode: Mode) => string; network: (mode: Mode) => Network; merchantId?: string };

/**
 * The receipt, the amount written with its currency's decimals, what was bought (the session's
 * concept, for the page), the merchant's id (for the page, in its brand) and the order's mode.
 */
export async function findReceiptWithAmountText(
  db: Db,
  publicOrderId: string,
  options: ReceiptScope,
): Promise<{ receipt: ReceiptView; amountText: string; concept: string | null; merchantId: string; mode: Mode } | undefined> {
  const row = await db
    .selectFrom('payments')
    .innerJoin('payment_sessions', 'payment_sessions.id', 'payments.session_id')
    .innerJoin('merchants', 'merchants.id', 'payments.merchant_id')
    .select([
      'payments.public_order_id',
      'payments.status',
      'payments.session_id',
      'payments.amount_minor',
      'payments.currency',
      'payments.value',
      'payments.rate',
      'payments.payer',
      'payments.pay_to',
      'payments.tx_hash',
      'payments.settled_at',
      'payments.merchant_id',
      'payments.mode',
      'payment_sessions.order_id',
      'payment_sessions.concept',
      'merchants.name',
    ])
    .where('payments.public_order_id', '=', normalizePublicOrderId(publicOrderId))
    .where('payments.status', 'in', ['SUCCESS', 'REVERSED'])
    .where('payments.mode', 'in', options.modes)
    .$if(options.merchantId !== undefined, (qb) => qb.where('payments.merchant_id', '=', options.merchantId!))
    .executeTakeFirst();
  if (!row?.tx_hash || row.settled_at === null || row.public_order_id === null) return undefined;
  const explorerTxUrl = options.explorerTxUrl(row.mode);
  const network = options.network(row.mode);
  const refunds = await db
    .selectFrom('payments')
    .innerJoin('refunds', 'refunds.payment_id', 'payments.id')
    .select(['refunds.id', 'refunds.amount_minor', 'refunds.value', 'refunds.tx_hash', 'refunds.updated_at'])
    .where('payments.public_order_id', '=', row.public_order_id)
    .where('refunds.status', '=', 'SUCCEEDED')
    .orderBy('refunds.created_at')
    .orderBy('refunds.id')
    .execute();
  const receipt: ReceiptView = {
    publicOrderId: row.public_order_id,
    status: row.status as 'SUCCESS' | 'REVERSED',
    paymentSessionId: row.session_id,
    orderId: row.order_id,
    merchantName: row.name,
    amount: decimalNumber(row.amount_minor, row.currency),
    currency: row.currency,
    token: TOKEN_SYMBOL,
    tokenAmount: formatUsdc(row.value),
    rate: row.rate,
    network: network.v1 as ReceiptView['network'],
    chainId: network.chainId as ReceiptView['chainId'],
    payer: getAddress(row.payer),
    payTo: getAddress(row.pay_to),
    transactionHash: row.tx_hash,
    explorerUrl: explorerUrl(explorerTxUrl, row.tx_hash),
    settledAt: new Date(row.settled_at).toISOString(),
    refundedAmount: decimalNumber(
      refunds.reduce((sum, r) => sum + r.amount_minor, 0n),
      row.currency,
    ),
    refundedTokenAmount: formatUsdc(refunds.reduce((sum, r) => sum + r.value, 0n)),
    refunds: refunds.map((r) => ({
      id: r.id,
      amount: decimalNumber(r.amount_minor, row.currency),
      tokenAmount: formatUsdc(r.value),
      transactionHash: r.tx_hash ?? '',
      explorerUrl: r.tx_hash ? explorerUrl(explorerTxUrl, r.tx_hash) : '',
      refundedAt: new Date(r.updated_at).toISOString(),
    })),
  };
  return { receipt, amountText: formatMoney(row.amount_minor, row.currency), concept: row.concept, merchantId: row.merchant_id, mode: row.mode };
}

/**
 * The receipt of a settled (or since reversed) order of the scope's modes by its public id, with or
 * without `TX-`; only among the merchant's own orders when `merchantId` is given. Undefined when
 * there is none.
 */
export async function findReceipt(db: Db, publicOrderId: string, options: ReceiptScope): Promise<ReceiptView | undefined> {
  return (await findReceiptWithAmountText(db, publicOrderId, options))?.receipt;
}

export const MAX_ORDERS_PAGE_SIZE = 100;
export const DEFAULT_ORDERS_PAGE_SIZE = 20;

export type PaidOrder = {
  publicOrderId: string;
  paymentSessionId: string;
  /** The merchant's own reference of the session, if it set one. */
  orderId: string | null;
  amount: number;
  currency: string;
  token: typeof TOKEN_SYMBOL;
  /** USDC paid, as a decimal string. */
  tokenAmount: string;
  network: typeof NETWORK_V1;
  transactionHash: string;
  /** ISO 8601. */
  paidAt: string;
};

/** The columns of an order in a list. */
const ORDER_COLUMNS = [
  'payments.id',
  'payments.public_order_id',
  'payments.session_id',
  'payments.amount_minor',
  'payments.currency',
  'payments.value',
  'payments.tx_hash',
  'payments.settled_at',
  'payment_sessions.order_id',
] as const;

type OrderRow = Pick<PaymentRow, 'public_order_id' | 'session_id' | 'amount_minor' | 'currency' | 'value' | 'tx_hash' | 'settled_at'> & {
  order_id: string | null;
};

function paidOrderOf(row: OrderRow): PaidOrder {
  return {
    publicOrderId: row.public_order_id ?? '',
    paymentSessionId: row.session_id,
    orderId: row.order_id,
    amount: decimalNumber(row.amount_minor, row.currency),
    currency: row.currency,
    token: TOKEN_SYMBOL,
    tokenAmount: formatUsdc(row.value),
    network: NETWORK_V1,
    transactionHash: row.tx_hash ?? '',
    paidAt: new Date(Number(row.settled_at ?? 0)).toISOString(),
  };
}

export type PaidOrdersPage = { orders: PaidOrder[]; page: number; size: number; hasMore: boolean };

/**
 * A merchant's paid orders of `mode` (payments that settled and were not reversed), newest first, one page at a
 * time: `page` from 1, `size` 1 to 100 (20 unless given); `hasMore` says whether a next page has
 * orders. No total: counting every paid order would cost a walk of them all on every call.
 */
export async function listPaidOrders(db: Db, mode: Mode, merchantId: string, paging: { page?: number; size?: number } = {}): Promise<PaidOrdersPage> {
  const page = paging.page ?? 1;
  const size = paging.size ?? DEFAULT_ORDERS_PAGE_SIZE;
  if (!Number.isSafeInteger(page) || page < 1) throw new TillError('invalid_field', { field: 'page', problem: 'must be an integer of at least 1' });
  if (!Number.isSafeInteger(size) || size < 1 || size > MAX_ORDERS_PAGE_SIZE)
    throw new TillError('invalid_field', { field: 'size', problem: `must be an integer from 1 to ${MAX_ORDERS_PAGE_SIZE}` });
  const paid = db
    .selectFrom('payments')
    .where('payments.merchant_id', '=', merchantId)
    .where('payments.status', '=', 'SUCCESS')
    .where('payments.mode', '=', mode);
  const rows = await paid
    .innerJoin('payment_sessions', 'payment_sessions.id', 'payments.session_id')
    .select(ORDER_COLUMNS)
    .orderBy('payments.settled_at', 'desc')
    .orderBy('payments.id', 'desc')
    // One row past the page says whether there is a next one.
    .limit(size + 1)
    .offset((page - 1) * size)
    .execute();
  return { orders: rows.slice(0, size).map(paidOrderOf), page, size, hasMore: rows.length > size };
}

export type OrderStatus = 'SUCCESS' | 'REVERSED';

/** What the merchant's orders list is narrowed to; every filter is answered from an index. */
export type OrderFilter = {
  /** One status, or both (settled, since reversed or not) when absent. */
  status?: OrderStatus;
  /** Settled at or after this instant (ms). */
  from?: number;
  /** Settled before this instant (ms). */
  to?: number;
  sessionId?: string;
  /** A `TX-…` public order id, or else the merchant's own `orderId`, matched exactly. */
  search?: string;
};

/** Where a page of orders ends: the next page starts after this order. */
export type OrdersCursor = { settledAt: number; id: string };

/** Whether an order was refunded (refunds that succeeded): none of it, part, or all. */
export type RefundState = 'none' | 'partial' | 'full';

export type MerchantOrder = PaidOrder & {
  status: OrderStatus;
  /** What was paid for: the session's concept, if it has one. */
  concept: string | null;
  refundState: RefundState;
  /** USDC refunded (refunds that succeeded), as a decimal string. */
  refundedTokenAmount: string;
  /** USDC that may still be refunded (paid less refunds that succeeded or are pending), as a decimal string; 0 unless SUCCESS. */
  refundableTokenAmount: string;
  settledAtMs: number;
  id: string /** The amount with its currency's decimals, e.g. `12.00 USD`. */;
  amountText: string;
};

export type OrdersSlice = { orders: MerchantOrder[]; next: OrdersCursor | undefined };

/** A cursor as it travels in a link: `<settled ms>.<payment id>`. */
export const cursorText = (cursor: OrdersCursor) => `${cursor.settledAt}.${cursor.id}`;

export function parseCursor(text: string): OrdersCursor | undefined {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(text);
  return match ? { settledAt: Number(match[1]), id: match[2]! } : undefined;
}

/**
 * The merchant's settled orders of `mode`, newest first, filtered, one slice at a time after `after` (keyset
 * paging: no count and no offset, so a page costs the same at any depth and any table size). `next`
 * is the cursor of the following slice, absent on the last one.
 */
export async function searchOrders(
  db: Db,
  mode: Mode,
  merchantId: string,
  filter: OrderFilter,
  paging: { after?: OrdersCursor; size: number },
): Promise<OrdersSlice> {
  const { size } = paging;
  if (!Number.isSafeInteger(size) || size < 1 || size > 1000)
    throw new TillError('invalid_field', { field: 'size', problem: 'must be an integer from 1 to 1000' });
  const search = filter.search?.trim();
  const byPublicId = search !== undefined && search !== '' && /^tx-/i.test(search);
  // Within one session the payments come from the session's index; the merchant is then checked on
  // the session, so the planner is not tempted to walk all the merchant's orders to skip a sort.
  const oneSession = (filter.sessionId !== undefined && filter.sessionId !== '') || (!byPublicId && search !== undefined && search !== '');
  const rows = await db
    .selectFrom('payments')
    .innerJoin('payment_sessions', 'payment_sessions.id', 'payments.session_id')
    .select([...ORDER_COLUMNS, 'payments.status', 'payment_sessions.concept'])
    .$if(!oneSession, (qb) => qb.where('payments.merchant_id', '=', merchantId))
    .$if(oneSession, (qb) => qb.where('payment_sessions.merchant_id', '=', merchantId).where('payment_sessions.mode', '=', mode))
    .where('payments.mode', '=', mode)
    .$if(filter.status !== undefined, (qb) => qb.where('payments.status', '=', filter.status!))
    .$if(filter.status === undefined, (qb) => qb.where('payments.status', 'in', ['SUCCESS', 'REVERSED']))
    .where('payments.settled_at', 'is not', null)
    .$if(filter.from !== undefined, (qb) => qb.where('payments.settled_at', '>=', filter.from!))
    .$if(filter.to !== undefined, (qb) => qb.where('payments.settled_at', '<', filter.to!))
    .$if(filter.sessionId !== undefined && filter.sessionId !== '', (qb) => qb.where('payments.session_id', '=', filter.sessionId!))
    .$if(byPublicId, (qb) => qb.where('payments.public_order_id', '=', normalizePublicOrderId(search!)))
    .$if(!byPublicId && search !== undefined && search !== '', (qb) => qb.where('payment_sessions.order_id', '=', search!))
    .$if(paging.after !== undefined, (qb) =>
      qb.where((eb) => eb(eb.refTuple('payments.settled_at', 'payments.id'), '<', eb.tuple(paging.after!.settledAt, paging.after!.id))),
    )
    .orderBy('payments.settled_at', 'desc')
    .orderBy('payments.id', 'desc')
    .limit(size + 1)
    .execute();
  const shown = rows.slice(0, size);
  const refunded = new Map<string, bigint>();
  const held = new Map<string, bigint>();
  if (shown.length > 0)
    for (const r of await db
      .selectFrom('refunds')
      .select(['payment_id', 'value', 'status'])
      .where(
        'payment_id',
        'in',
        shown.map((row) => row.id),
      )
      .where('status', 'in', ['SUCCEEDED', 'PENDING'])
      .execute()) {
      held.set(r.payment_id, (held.get(r.payment_id) ?? 0n) + r.value);
      if (r.status === 'SUCCEEDED') refunded.set(r.payment_id, (refunded.get(r.payment_id) ?? 0n) + r.value);
    }
  const orders = shown.map(
    (row): MerchantOrder => ({
      ...paidOrderOf(row),
      refundState: !refunded.has(row.id) ? 'none' : refunded.get(row.id)! >= row.value ? 'full' : 'partial',
      refundedTokenAmount: formatUsdc(refunded.get(row.id) ?? 0n),
      refundableTokenAmount: formatUsdc(row.status === 'SUCCESS' && row.value > (held.get(row.id) ?? 0n) ? row.value - (held.get(row.id) ?? 0n) : 0n),
      id: row.id,
      status: row.status as OrderStatus,
      concept: row.concept,
      settledAtMs: Number(row.settled_at),
      amountText: formatMoney(row.amount_minor, row.currency),
    }),
  );
  const last = orders.at(-1);
  return { orders, next: rows.length > size && last ? { settledAt: last.settledAtMs, id: last.id } : undefined };
}
