import { sql } from 'kysely';
import type { AppContext } from '../context.ts';
import { formatMoney } from '../money/iso4217.ts';
import { accountMailMode, paymentsWithSessions, queuePendingNotice } from './notices.ts';
import { queueMail } from './outbox.ts';
import { noticeRecipients, summaryRecipients } from './preferences.ts';
import type { MailPass } from './worker.ts';

/** A PENDING payment older than this needs attention (docs/operations.md: alert past 15 minutes). */
export const PENDING_BOUND_MS = 15 * 60_000;
/** A webhook endpoint that has not accepted a delivery for this long is reported to the merchant's users. */
export const WEBHOOK_FAILING_MS = 24 * 3_600_000;
const DAY_MS = 86_400_000;
const BATCH = 100;

type PassContext = Pick<AppContext, 'db' | 'config'>;

/** PENDING payments past the bound, each reported once (the outbox takes one mail per cause and recipient). */
async function reportLongPending(context: PassContext, now: number): Promise<void> {
  const rows = await paymentsWithSessions(context.db)
    .where('p.status', '=', 'PENDING')
    .where('p.created_at', '<', now - PENDING_BOUND_MS)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('mail_outbox as m').select('m.id').where('m.cause', '=', sql<string>`${'payment:'} || p.id || ${':pending-past-bound'}`))),
    )
    .limit(BATCH)
    .execute();
  for (const row of rows)
    await context.db
      .transaction()
      .execute((trx) =>
        queuePendingNotice(
          trx,
          { type: 'payment.pending', payment: row, session: { id: row.session_id, order_id: row.order_id, concept: row.concept }, now, explorerTxUrl: '' },
          PENDING_BOUND_MS / 60_000,
        ),
      );
}

/**
 * Webhook endpoints with no delivery accepted since a failing one was made more than a day ago: one
 * notice per failing streak (its cause names when the streak began).
 */
async function reportFailingWebhooks(context: PassContext, now: number): Promise<void> {
  const rows = await sql<{ merchant_id: string; mode: 'sandbox' | 'live'; failing_since: number | string; failed: number | string; url: string }>`
    SELECT d.merchant_id, ev.mode, MIN(d.created_at) AS failing_since, COUNT(*) AS failed, MIN(e.url) AS url
    FROM webhook_deliveries d
    JOIN webhook_events ev ON ev.id = d.event_id
    JOIN webhook_endpoints e ON e.merchant_id = d.merchant_id AND e.mode = ev.mode
    WHERE d.status IN ('PENDING', 'FAILED') AND d.attempts > 0 AND d.created_at > ${now - 4 * DAY_MS}
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries s JOIN webhook_events sev ON sev.id = s.event_id
        WHERE s.merchant_id = d.merchant_id AND sev.mode = ev.mode AND s.status = 'SUCCEEDED' AND s.delivered_at > d.created_at)
    GROUP BY d.merchant_id, ev.mode
    HAVING MIN(d.created_at) < ${now - WEBHOOK_FAILING_MS}
    LIMIT ${BATCH}`.execute(context.db);
  for (const row of rows.rows) {
    const merchant = await context.db.selectFrom('merchants').select('name').where('id', '=', row.merchant_id).executeTakeFirst();
    await context.db.transaction().execute(async (trx) => {
      for (const { userId, email } of await noticeRecipients(trx, row.merchant_id, 'webhooks'))
        await queueMail(
          trx,
          {
            mode: row.mode,
            merchantId: row.merchant_id,
            userId,
            cause: `webhook:${row.merchant_id}:${row.mode}:${Number(row.failing_since)}`,
            recipient: email,
            data: {
              kind: 'webhook_failing',
              merchantName: merchant?.name ?? '',
              url: row.url,
              failingSince: Number(row.failing_since),
              failed: Number(row.failed),
            },
          },
          now,
        );
    });
  }
}

/** The last whole UTC day before `now`, or the last whole week (Monday to Monday). */
export function lastPeriod(period: 'daily' | 'weekly', now: number): { from: number; to: number } {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  if (period === 'daily') return { from: today - DAY_MS, to: today };
  // 1970-01-01 was a Thursday: Mondays are 4 days after a multiple of 7 days.
  const monday = today - ((Math.floor(today / DAY_MS) + 3) % 7) * DAY_MS;
  return { from: monday - 7 * DAY_MS, to: monday };
}

/** Each summary asked for, once its period is over: the payments and refunds of the deployment's main mode. */
async function sendSummaries(context: PassContext, now: number): Promise<void> {
  const mode = accountMailMode(context.config.modes);
  for (const period of ['daily', 'weekly'] as const) {
    const { from, to } = lastPeriod(period, now);
    for (const user of await summaryRecipients(context.db, period)) {
      const cause = `summary:${user.userId}:${period}:${from}`;
      const already = await context.db.selectFrom('mail_outbox').select('id').where('cause', '=', cause).executeTakeFirst();
      if (already) continue;
      const payments = await context.db
        .selectFrom('payments')
        .select([
          'currency',
          (eb) => eb.fn.sum<string | number | bigint>('amount_minor').as('total'),
          (eb) => eb.fn.countAll<string | number | bigint>().as('count'),
        ])
        .where('merchant_id', '=', user.merchantId)
        .where('mode', '=', mode)
        .where('status', '=', 'SUCCESS')
        .where('settled_at', '>=', from)
        .where('settled_at', '<', to)
        .groupBy('currency')
        .execute();
      const refunds = await context.db
        .selectFrom('refunds')
        .select((eb) => eb.fn.countAll<string | number | bigint>().as('count'))
        .where('merchant_id', '=', user.merchantId)
        .where('mode', '=', mode)
        .where('status', '=', 'SUCCEEDED')
        .where('updated_at', '>=', from)
        .where('updated_at', '<', to)
        .executeTakeFirstOrThrow();
      const merchant = await context.db.selectFrom('merchants').select('name').where('id', '=', user.merchantId).executeTakeFirst();
      await queueMail(
        context.db,
        {
          mode,
          merchantId: user.merchantId,
          userId: user.userId,
          cause,
          recipient: user.email,
          data: {
            kind: 'summary',
            merchantName: merchant?.name ?? '',
            period,
            from,
            to,
            payments: payments.reduce((sum, row) => sum + Number(row.count), 0),
            totals: payments.map((row) => ({ currency: row.currency, amount: formatMoney(BigInt(row.total), row.currency) })),
            refunds: Number(refunds.count),
          },
        },
        now,
      );
    }
  }
}

/** The mail worker's periodic looks, once a minute. */
export function mailPasses(context: PassContext, intervalMs = 60_000): MailPass[] {
  return [
    { name: 'long-pending payments', intervalMs, run: (now) => reportLongPending(context, now) },
    { name: 'failing webhooks', intervalMs, run: (now) => reportFailingWebhooks(context, now) },
    { name: 'summaries', intervalMs, run: (now) => sendSummaries(context, now) },
  ];
}
