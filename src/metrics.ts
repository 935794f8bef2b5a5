import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export type Metrics = ReturnType<typeof createMetrics>;

/** One registry per service instance (tests start many in one process). */
export function createMetrics() {
  const registry = new Registry();
  /** Read from the database at each scrape; set by the composition root once the database is open. */
  const sources: { oldestPendingSeconds?: () => Promise<number>; mailsByStatus?: () => Promise<Record<string, number>> } = {};
  collectDefaultMetrics({ register: registry, prefix: 'till_' });
  return {
    registry,
    sources,
    httpRequestSeconds: new Histogram({
      name: 'till_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    sessionsCreated: new Counter({ name: 'till_payment_sessions_created_total', help: 'Payment sessions created', registers: [registry] }),
    facilitatorCallSeconds: new Histogram({
      name: 'till_facilitator_call_duration_seconds',
      help: 'Calls to the x402 facilitator by operation',
      labelNames: ['operation', 'outcome'],
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    facilitatorProblems: new Counter({
      name: 'till_facilitator_problems_total',
      help: "Facilitator calls that gave no verdict, by operation, kind (timeout, unreachable, unreadable, server_error, rate_limited, refused: a configuration error) and the facilitator's errorType",
      labelNames: ['operation', 'kind', 'error_type'],
      registers: [registry],
    }),
    x402ProofsRefused: new Counter({
      name: 'till_x402_proofs_refused_total',
      help: 'Payment proofs refused, by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    x402PaymentsSettled: new Counter({ name: 'till_x402_payments_settled_total', help: 'Payments settled through x402', registers: [registry] }),
    x402ChallengesCached: new Counter({
      name: 'till_x402_challenges_cached_total',
      help: 'x402 challenges answered from the per-instance cache of encoded challenges, without reading the database',
      registers: [registry],
    }),
    x402PaymentsRecovered: new Counter({
      name: 'till_x402_payments_recovered_total',
      help: 'FAILED payments moved to SUCCESS because their transfer was found on chain later (each one is also logged as an error)',
      registers: [registry],
    }),
    x402LateSettlements: new Counter({
      name: 'till_x402_late_settlements_total',
      help: 'Facilitator successes that arrived for a payment already FAILED; the reconciler checks their transaction on chain',
      registers: [registry],
    }),
    x402ReconcilerFindings: new Counter({
      name: 'till_x402_reconciler_findings_total',
      help: "The reconciler's findings per look at a payment, by finding",
      labelNames: ['finding'],
      registers: [registry],
    }),
    x402OldestPendingSeconds: new Gauge({
      name: 'till_x402_oldest_pending_payment_age_seconds',
      help: 'Age of the oldest PENDING payment (0 when none); alert when it passes the bound in docs/operations.md',
      registers: [registry],
      async collect() {
        this.set((await sources.oldestPendingSeconds?.()) ?? 0);
      },
    }),
    backgroundRowFailures: new Counter({
      name: 'till_background_row_failures_total',
      help: 'Rows a background pass could not handle and skipped (logged), by pass',
      labelNames: ['pass'],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'till_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    mails: new Gauge({
      name: 'till_mails',
      help: 'Mails in the outbox by status: PENDING (queued or being retried), SENT, FAILED (retries exhausted: alert on any), KEPT (no SMTP server: kept unsent)',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const counts = (await sources.mailsByStatus?.()) ?? {};
        for (const status of ['PENDING', 'SENT', 'FAILED', 'KEPT']) this.set({ status }, counts[status] ?? 0);
      },
    }),
    mailAttempts: new Counter({
      name: 'till_mail_attempts_total',
      help: 'Attempts to hand a mail to the SMTP server, by outcome (sent, retry, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}
