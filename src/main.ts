import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type DatabaseHandle } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { buildApp } from './http/app.ts';
import type { AppContext } from './http/context.ts';
import { createMetrics } from './http/metrics.ts';
import { registerSessionRoutes } from './sessions/index.ts';
import type { RatesProvider } from './money/rates.ts';
import { createX402Services, registerX402Routes } from './x402/services.ts';
import { registerReceiptRoutes } from './payments/receipt.route.ts';
import { registerSandboxProxy } from './sandbox/service-routes.ts';

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
export async function createService(config: Config, options: { log?: Logger; now?: () => number; rates?: RatesProvider } = {}): Promise<Service> {
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
  const x402 = createX402Services(context, options.rates ? { rates: options.rates } : {});
  const app = await buildApp(context, [registerSessionRoutes, registerX402Routes(x402), registerReceiptRoutes, registerSandboxProxy]);
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
