import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type DatabaseHandle } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { buildApp } from './http/app.ts';
import type { AppContext } from './http/context.ts';
import { createMetrics } from './http/metrics.ts';
import { registerSessionRoutes } from './sessions/index.ts';

export type Service = {
  app: FastifyInstance;
  context: AppContext;
  database: DatabaseHandle;
  close(): Promise<void>;
};

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: ['req.headers["x-sc-apikey"]', 'req.headers.authorization', 'req.headers["x-payment"]', 'req.headers["payment-signature"]'], censor: '[redacted]' },
  });
}

/** Composition root: config → database → services → HTTP app (→ workers, per role). */
export async function createService(config: Config, options: { log?: Logger; now?: () => number } = {}): Promise<Service> {
  const database = openDatabase(config);
  await migrateToLatest(database.db);
  const context: AppContext = {
    config,
    db: database.db,
    dbKind: database.kind,
    metrics: createMetrics(),
    log: options.log ?? createLogger(config),
    now: options.now ?? Date.now,
  };
  const app = await buildApp(context, [registerSessionRoutes]);
  return {
    app,
    context,
    database,
    async close() {
      await app.close();
      await database.close();
    },
  };
}
