import { type Config, loadConfig } from '../config.ts';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest } from '../db/migrate.ts';

/** Opens the configured database (migrated) for one operator command, and closes it after. */
export async function withDatabase<T>(work: (database: DatabaseHandle, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = openDatabase(config);
  try {
    await migrateToLatest(database.db, { secretKey: config.secretKey });
    return await work(database, config);
  } finally {
    await database.close();
  }
}
