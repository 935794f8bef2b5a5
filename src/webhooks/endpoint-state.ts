import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';

export type WebhookEndpointState =
  | { configured: false }
  | {
      configured: true;
      url: string;
      /** When the endpoint was turned off after failing, and why; null while it is on. */
      disabledAt: number | null;
      disabledReason: string | null;
      /** Deliveries since `since` that gave up after their last attempt. */
      failed: number;
      /** Deliveries since `since` still being retried after at least one failed attempt. */
      retrying: number;
    };

/**
 * What the dashboard's overview says of the merchant's webhook endpoint of `mode` (the service's):
 * whether there is one, whether it is on, and how many recent deliveries of that mode's events
 * failed or are being retried. Read only; the delivery count is bounded by `since` on the
 * `webhook_deliveries_merchant` index (merchant, created_at).
 */
export async function webhookEndpointState(db: Db, mode: Mode, merchantId: string, since: number): Promise<WebhookEndpointState> {
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select(['url', 'disabled_at', 'disabled_reason'])
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .executeTakeFirst();
  if (!endpoint) return { configured: false };
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select(['d.status', (eb) => eb.fn.countAll<number | bigint | string>().as('count')])
    .where('d.merchant_id', '=', merchantId)
    .where('d.created_at', '>=', since)
    .where('ev.mode', '=', mode)
    .where((eb) => eb.or([eb('d.status', '=', 'FAILED'), eb.and([eb('d.status', '=', 'PENDING'), eb('d.attempts', '>', 0)])]))
    .groupBy('d.status')
    .execute();
  const count = (status: string) => Number(rows.find((row) => row.status === status)?.count ?? 0);
  return {
    configured: true,
    url: endpoint.url,
    disabledAt: endpoint.disabled_at === null ? null : Number(endpoint.disabled_at),
    disabledReason: endpoint.disabled_reason,
    failed: count('FAILED'),
    retrying: count('PENDING'),
  };
}
