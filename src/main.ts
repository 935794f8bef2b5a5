import type { FastifyInstance } from 'fastify';
import { type Logger, pino } from 'pino';
import { purgeEndedPasswordResets } from './accounts/password-resets.ts';
import { purgeEndedSignUps } from './accounts/sign-ups.ts';
import { purgeForgottenFailures } from './accounts/throttle.ts';
import { purgeEndedUserSessions } from './accounts/user-sessions.ts';
import { createRails, railsList } from './chain/rails.ts';
import { startReconciler } from './chain/reconciler.ts';
import { registerRefundRoutes } from './chain/refunds.route.ts';
import { createWakeSignal } from './common/wake-signal.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { type DatabaseHandle, type OpenDatabaseOptions, openDatabase } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { buildApp } from './http/app.ts';
import { purgeEndedWindows } from './limits/limits.ts';
import { mailPasses } from './mail/passes.ts';
import { startMailWorker } from './mail/worker.ts';
import { registerMcpRoutes } from './mcp/mcp.route.ts';
import { createMetrics } from './metrics.ts';
import { createRatesProvider, type RatesProvider } from './money/rates.ts';
import { purgeEndedAuthorizationRequests } from './oauth/authorization-requests.ts';
import { createClientMetadataResolver } from './oauth/client-metadata.ts';
import { registerCodingAgentsRoutes } from './oauth/coding-agents.route.ts';
import { registerDiscoveryRoutes } from './oauth/discovery.route.ts';
import { purgeEndedGrantSecrets } from './oauth/grant-secrets.ts';
import { registerTokenRoute } from './oauth/token.route.ts';
import { oldestPendingSince } from './payments/payments.ts';
import { registerReceiptRoutes } from './payments/receipt.route.ts';
import { registerSandboxProxy } from './sandbox/service-routes.ts';
import { startExpirySweeper } from './sessions/expiry.ts';
import { registerSessionRoutes } from './sessions/routes.ts';
import { registerBrandAssets } from './web/brand/brand.route.ts';
import { registerCheckoutPage } from './web/checkout/page.route.ts';
import { loadAssets, registerAssets } from './web/kit/assets.ts';
import { registerMailPages } from './web/mail/routes.ts';
import { renderMail } from './web/mail/templates.ts';
import { receiptPage } from './web/receipt/page.ts';
import { registerWebPages } from './web/routes.ts';
import { registerWebhookRoutes } from './webhooks/routes.ts';
import { startWebhookWorker } from './webhooks/worker.ts';
import { purgeOldAttempts } from './x402/attempts.ts';
import { purgeOldQuotes } from './x402/quotes.ts';
import { registerX402Routes } from './x402/routes.ts';
import { createX402Services } from './x402/services.ts';

export type Service = {
  app: FastifyInstance;
  context: AppContext;
  database: DatabaseHandle;
  close(): Promise<void>;
};

export type Worker = { stop(): Promise<void> };

export type LogFormat = 'json' | 'pretty';

/**
 * The service's logger: JSON lines for log pipelines, or, for a person at a terminal (`pretty`),
 * one readable line per entry, a request as `GET /path → 200 in 3 ms`.
 */
export async function createLogger(
  config: Pick<Config, 'logLevel'>,
  { format = 'json', destination }: { format?: LogFormat; destination?: NodeJS.WritableStream } = {},
): Promise<Logger> {
  const options = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers["x-sc-apikey"]', 'req.headers.authorization', 'req.headers["x-payment"]', 'req.headers["payment-signature"]'],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return destination ? pino(options, destination) : pino(options);
  const { default: pretty } = await import('pino-pretty');
  return pino(
    options,
    pretty({
      colorize: destination === undefined && process.stdout.isTTY === true && !process.env.NO_COLOR,
      singleLine: true,
      translateTime: 'HH:MM:ss.l',
      ignore: 'pid,hostname,req,res,responseTime',
      messageFormat: (log, messageKey) => {
        const { req, res, responseTime } = log as { req?: { method: string; url: string }; res?: { statusCode: number }; responseTime?: number };
        return req && res ? `${req.method} ${req.url} → ${res.statusCode} in ${Math.round(responseTime ?? 0)} ms` : String(log[messageKey]);
      },
      sync: true,
      ...(destination ? { destination } : {}),
    }),
  );
}

export type CreateServiceOptions = {
  log?: Logger;
  now?: () => number;
  rates?: RatesProvider;
  /** Without `log`: readable lines (`pretty`) or JSON lines (the default). */
  logFormat?: LogFormat;
  /** Background workers (webhook delivery, expiry, reconciler); on unless false or TILL_ROLE=api. */
  workers?: boolean;
  /** Told every statement sent to the database (see openDatabase). */
  onQuery?: OpenDatabaseOptions['onQuery'];
  /** Crash tests only; see AppContext.faultHook. */
  faultHook?: AppContext['faultHook'];
};

/** Composition root: config → database → services → HTTP app (→ workers, per role). */
export async function createService(config: Config, options: CreateServiceOptions = {}): Promise<Service> {
  // The pages' built stylesheets and scripts are read first: without them (no `npm run build`) the start stops.
  loadAssets();
  const database = openDatabase(config, options.onQuery ? { onQuery: options.onQuery } : {});
  await migrateToLatest(database.db, { secretKey: config.secretKey });
  const context: AppContext = {
    config,
    db: database.db,
    dbKind: database.kind,
    metrics: createMetrics(),
    log: options.log ?? (await createLogger(config, { format: options.logFormat ?? 'json' })),
    now: options.now ?? Date.now,
    rates: options.rates ?? createRatesProvider(config),
    webhookWake: createWakeSignal(),
    ...(options.faultHook ? { faultHook: options.faultHook } : {}),
  };
  context.metrics.sources.oldestPendingSeconds = async () => {
    const since = await oldestPendingSince(context.db, config.modes);
    return since === undefined ? 0 : Math.max(0, (context.now() - since) / 1000);
  };
  // Each mode's facilitator and chain reader, built once: the pay flow, refunds and the reconcilers share them.
  const rails = createRails(config, context.metrics);
  const x402 = createX402Services(context, rails);
  const clientMetadata = createClientMetadataResolver(config);
  const app = await buildApp(context, [
    registerSessionRoutes,
    registerX402Routes(x402),
    registerRefundRoutes(rails),
    registerReceiptRoutes(receiptPage),
    registerWebhookRoutes,
    registerSandboxProxy,
    registerCheckoutPage(x402),
    registerAssets,
    registerBrandAssets,
    registerTokenRoute,
    registerCodingAgentsRoutes,
    registerDiscoveryRoutes,
    registerMcpRoutes(rails),
    registerMailPages,
    registerWebPages(clientMetadata, rails),
  ]);
  // Background roles: every instance may run them; they claim work through the database.
  const workers: Worker[] = [];
  if (options.workers !== false && config.role !== 'api') {
    workers.push(startWebhookWorker(context, { settings: config.webhooks }));
    workers.push(
      startMailWorker(context, {
        render: (mail) => renderMail({ db: context.db, baseUrl: config.baseUrl, secretKey: config.secretKey }, mail),
        passes: mailPasses(context),
      }),
    );
    workers.push(
      startExpirySweeper(context, {
        intervalMs: config.expirySweepIntervalMs,
        purges: [
          purgeOldQuotes,
          purgeEndedUserSessions,
          purgeEndedPasswordResets,
          purgeEndedSignUps,
          purgeForgottenFailures,
          purgeEndedAuthorizationRequests,
          purgeEndedGrantSecrets,
          purgeEndedWindows,
          purgeOldAttempts,
        ],
      }),
    );
    for (const modeRails of railsList(rails)) {
      const { chain } = modeRails;
      if (chain) workers.push(startReconciler(context, { ...modeRails, chain, intervalMs: config.reconcileIntervalMs, graceMs: config.reconcileGraceMs }));
    }
  }
  return {
    app,
    context,
    database,
    async close() {
      await app.close();
      await Promise.all(workers.map((w) => w.stop()));
      await clientMetadata.close();
      await database.close();
    },
  };
}
