import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';

/**
 * A row that a background pass could not handle (a session to expire, a webhook delivery, a purge):
 * logged at error level with what identifies it, and counted in
 * `till_background_row_failures_total{pass}`. The caller skips it and goes on with the other rows,
 * so one bad row never stops the pass for every merchant.
 */
export function reportRowFailure(
  context: { log: Logger; metrics: Pick<Metrics, 'backgroundRowFailures'> },
  pass: string,
  row: Record<string, string>,
  error: unknown,
  message: string,
): void {
  context.metrics.backgroundRowFailures.inc({ pass });
  context.log.error({ err: error, pass, ...row }, message);
}
