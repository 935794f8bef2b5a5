// Webhook delivery on SQLite: deliveries per second to a local receiver, and the delay from a
// status change (the event's timestamp) to the first attempt reaching the receiver.
// Targets: ≥ 1,000 deliveries/s; first attempt p95 ≤ 50 ms. Alone: npx node bench/webhooks.ts

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createWakeSignal } from '../src/common/wake-signal.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createMerchant } from '../src/merchants/merchants.ts';
import { createMetrics } from '../src/metrics.ts';
import { setWebhook } from '../src/webhooks/endpoints.ts';
import { enqueueWebhookEvent, type WebhookSession } from '../src/webhooks/events.ts';
import { startReceiver } from '../src/webhooks/fixtures/receiver.ts';
import { startWebhookWorker } from '../src/webhooks/worker.ts';
import { type BenchOptions, type BenchReport, createBenchDatabase } from './support.ts';

const BACKLOG = 5000;
const LATENCY_SAMPLES = 500;
/** Pause between status changes in the delay measurement, as traffic arrives rather than in one burst. */
const SPACING_MS = 4;
const TARGET_PER_SECOND = 1000;
const TARGET_P95_MS = 50;

export async function run(_options: BenchOptions, log: (line: string) => void = () => {}): Promise<BenchReport> {
  const database = await createBenchDatabase('sqlite');
  const dataDir = mkdtempSync(join(tmpdir(), 'till-bench-'));
  const config = loadConfig({ TILL_DATABASE_URL: database.url, TILL_DATA_DIR: dataDir, TILL_SECRET_KEY: randomBytes(32).toString('hex') });
  const handle = openDatabase(config);
  const { db } = handle;
  const receiver = await startReceiver();
  try {
    await migrateToLatest(db);
    const merchant = await createMerchant(db, { name: 'Bench' });
    await setWebhook(db, config.secretKey, merchant.id, { url: receiver.url }, 'sandbox');
    const session: WebhookSession = {
      id: 'ps_bench',
      merchant_id: merchant.id,
      order_id: 'bench',
      amount_minor: 1000n,
      currency: 'USD',
      success_url: null,
      fail_url: null,
      cancel_url: null,
      mode: 'sandbox',
    };
    const enqueue = (trx: typeof db) =>
      enqueueWebhookEvent(trx, { type: 'payment.succeeded', session, occurredAt: Date.now(), explorerTxUrl: config.explorerTxUrl, network: 'base' });
    const drained = async () => {
      for (;;) {
        const row = await db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('status', '=', 'PENDING')
          .executeTakeFirstOrThrow();
        if (Number(row.n) === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    // 1. Throughput: a backlog drained by one worker.
    for (let written = 0; written < BACKLOG; written += 500) {
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 500; i++) await enqueue(trx);
      });
    }
    log(`draining a backlog of ${BACKLOG} events…`);
    const started = performance.now();
    const webhookWake = createWakeSignal();
    const worker = startWebhookWorker(
      { config, db, dbKind: handle.kind, log: pino({ level: 'silent' }), metrics: createMetrics(), webhookWake },
      { settings: { retrySchedule: [1000], allowLoopbackTargets: true, allowPrivateTargets: true } },
    );
    await drained();
    const perSecond = BACKLOG / ((performance.now() - started) / 1000);

    // 2. Delay to first attempt: one status change per transaction, the worker woken after each commit.
    log(`measuring the delay to first attempt over ${LATENCY_SAMPLES} status changes…`);
    receiver.received.length = 0;
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      await db.transaction().execute(enqueue);
      webhookWake.notify();
      await new Promise((resolve) => setTimeout(resolve, SPACING_MS));
    }
    await drained();
    await worker.stop();
    const delays = receiver.received.map((r) => r.receivedAt - JSON.parse(r.body).timestamp).sort((a, b) => a - b);
    const percentile = (p: number) => delays[Math.min(delays.length - 1, Math.floor((p / 100) * delays.length))]!;
    const [p50, p95] = [percentile(50), percentile(95)];

    const verdict = perSecond >= TARGET_PER_SECOND && p95 <= TARGET_P95_MS ? 'targets met' : 'TARGET MISSED';
    const summary = `webhooks (SQLite): ${Math.round(perSecond)} deliveries/s (target ≥ ${TARGET_PER_SECOND}); first attempt p50 ${p50} ms, p95 ${p95} ms (target ≤ ${TARGET_P95_MS} ms) — ${verdict}`;
    log(summary);
    const markdown = [
      `| Engine | Deliveries/s (target ≥ ${TARGET_PER_SECOND.toLocaleString('en')}) | First attempt p50 | First attempt p95 (target ≤ ${TARGET_P95_MS} ms) |`,
      '|---|---|---|---|',
      `| SQLite | ${Math.round(perSecond)} | ${p50} ms | ${p95} ms |`,
    ].join('\n');
    return { name: 'webhooks', summary, markdown };
  } finally {
    await receiver.close();
    await handle.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) await run({ durationSeconds: 0, connections: 0 }, (line) => process.stdout.write(`${line}\n`));
