import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import { consume } from '../limits/limits.ts';

/**
 * Counts one `webhook.test` event of a merchant (API and dashboard together, across instances);
 * throws `rate_limited` (429 with Retry-After) past TILL_WEBHOOK_TEST_EVENTS_PER_HOUR.
 */
export const limitTestEvents = (db: Db, config: Pick<Config, 'webhookTestEventsPerHour'>, merchantId: string, now: number) =>
  consume(
    db,
    [
      {
        limit: {
          name: 'webhook_test_events_merchant',
          points: config.webhookTestEventsPerHour,
          windowMs: 60 * 60_000,
          what: 'webhook test events for this merchant',
        },
        subject: merchantId,
      },
    ],
    now,
  );
