import { type Kysely, PostgresAdapter, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One endpoint per merchant. The key and signing secret are sent or shown again, so they are sealed, not hashed.
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('merchant_id', 'text', (c) => c.primaryKey().references('merchants.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('webhook_key_sealed', 'text', (c) => c.notNull())
    .addColumn('signing_secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('disabled_at', 'bigint')
    .addColumn('disabled_reason', 'text')
    .execute();

  // The outbox: an event's body is frozen here, in the transaction of the status change.
  await db.schema
    .createTable('webhook_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text')
    .addColumn('payment_id', 'text')
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('occurred_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_events_merchant').on('webhook_events').columns(['merchant_id', 'created_at']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id'))
    .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    // The attempt number is also the lease's fencing token: a claim bumps it, a result is kept only if it still matches.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_until', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['next_attempt_at']).where(sql<boolean>`status = 'PENDING'`).execute();
  await db.schema.createIndex('webhook_deliveries_merchant').on('webhook_deliveries').columns(['merchant_id', 'created_at']).execute();
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').unique().on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();

  // On PostgreSQL every committed new delivery wakes the workers of every instance at once.
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`CREATE FUNCTION till_notify_webhook_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_notify('till_webhook_deliveries', ''); RETURN NULL; END $$`.execute(db);
    await sql`CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
      FOR EACH STATEMENT EXECUTE FUNCTION till_notify_webhook_delivery()`.execute(db);
  }
}
