import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';

/** The dashboard's days: UTC calendar days. */
export const DAY_MS = 86_400_000;

export type DayVolume = {
  /** The UTC day's start, epoch ms. */
  day: number;
  count: number;
  /** USDC paid that day, in base units. */
  usdc: bigint;
};

export type PaidVolume = {
  today: { count: number; usdc: bigint };
  lastDays: { count: number; usdc: bigint };
  /** Every day of the window, oldest first, today last; days without a payment count zero. */
  daily: DayVolume[];
};

/**
 * A merchant's paid volume in `mode` (payments that settled and were not reversed, in USDC) today and over the
 * last `days` UTC days including today, with the daily series. One grouped query over the
 * `payments_merchant_settled` index (merchant, status, settled_at): its cost follows the window's
 * payments, not the merchant's history.
 */
export async function paidVolume(db: Db, mode: Mode, merchantId: string, now: number, days = 30): Promise<PaidVolume> {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const since = today - (days - 1) * DAY_MS;
  const bucket = sql<number | bigint | string>`(settled_at / ${sql.lit(DAY_MS)})`;
  const rows = await db
    .selectFrom('payments')
    .select([
      bucket.as('bucket'),
      (eb) => eb.fn.countAll<number | bigint | string>().as('count'),
      (eb) => eb.fn.sum<number | bigint | string>('value').as('usdc'),
    ])
    .where('merchant_id', '=', merchantId)
    .where('status', '=', 'SUCCESS')
    .where('settled_at', '>=', since)
    .where('mode', '=', mode)
    .groupBy(bucket)
    .execute();
  const byDay = new Map(rows.map((row) => [Number(row.bucket) * DAY_MS, { count: Number(row.count), usdc: BigInt(String(row.usdc ?? 0)) }]));
  const daily = Array.from({ length: days }, (_, index) => {
    const day = since + index * DAY_MS;
    return { day, ...(byDay.get(day) ?? { count: 0, usdc: 0n }) };
  });
  const total = (list: DayVolume[]) => list.reduce((sum, d) => ({ count: sum.count + d.count, usdc: sum.usdc + d.usdc }), { count: 0, usdc: 0n });
  return { today: total(daily.slice(-1)), lastDays: total(daily), daily };
}

export type RecentOrder = {
  publicOrderId: string;
  orderId: string | null;
  /** What was paid for: the session's concept, if it has one. */
  concept: string | null;
  amountMinor: bigint;
  currency: string;
  usdc: bigint;
  paidAt: number;
};

/**
 * A merchant's latest paid orders of `mode`, newest first: `limit` rows read off the end of the
 * `payments_merchant_settled` index, with no count of the rest (so it costs the same at any history).
 */
export async function latestPaidOrders(db: Db, mode: Mode, merchantId: string, limit: number): Promise<RecentOrder[]> {
  const rows = await db
    .selectFrom('payments')
    .innerJoin('payment_sessions', 'payment_sessions.id', 'payments.session_id')
    .select([
      'payments.public_order_id',
      'payments.amount_minor',
      'payments.currency',
      'payments.value',
      'payments.settled_at',
      'payment_sessions.order_id',
      'payment_sessions.concept',
    ])
    .where('payments.merchant_id', '=', merchantId)
    .where('payments.status', '=', 'SUCCESS')
    .where('payments.mode', '=', mode)
    .orderBy('payments.settled_at', 'desc')
    .orderBy('payments.id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    publicOrderId: row.public_order_id ?? '',
    orderId: row.order_id,
    concept: row.concept,
    amountMinor: BigInt(row.amount_minor),
    currency: row.currency,
    usdc: BigInt(row.value),
    paidAt: Number(row.settled_at ?? 0),
  }));
}
