import { loadConfig } from '../config.ts';
import { createService } from '../main.ts';
import { createApiKey } from '../merchants/api-keys.ts';
import { countMerchants, createMerchant } from '../merchants/merchants.ts';
import { noneLeft } from './output.ts';

export async function serveCommand(args: string[]): Promise<void> {
  noneLeft(args);
  const config = loadConfig();
  const service = await createService(config);
  const { log } = service.context;

  // First start of a sandbox with an empty database: a demo merchant, so the README walkthrough works at once.
  if (config.mode === 'sandbox' && (await countMerchants(service.context.db)) === 0) {
    const merchant = await createMerchant(service.context.db, { name: 'Demo store (sandbox)' });
    const key = await createApiKey(service.context.db, merchant.id, 'test');
    process.stdout.write(
      `\n  Sandbox demo merchant ${merchant.id} created.\n  TEST API key (sandbox only, fake money; shown once): ${key.apiKey}\n\n`,
    );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await service.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await service.app.listen({ port: config.port, host: config.host });
  log.info({ baseUrl: config.baseUrl, mode: config.mode, database: config.databaseKind }, 'serving');
  process.stdout.write(`Till is serving on ${config.baseUrl} (${config.mode}, ${config.databaseKind}). API reference: ${config.baseUrl}/docs\n`);
}
