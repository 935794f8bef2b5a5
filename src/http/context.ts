import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Db, DatabaseKind } from '../db/index.ts';
import type { Metrics } from './metrics.ts';

/** Everything a route or worker needs, built once by the composition root. */
export type AppContext = {
  config: Config;
  db: Db;
  dbKind: DatabaseKind;
  metrics: Metrics;
  log: Logger;
  now: () => number;
};
