import { type CompiledQuery, Kysely, type KyselyConfig, type KyselyPlugin, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import { namedStatements } from './prepared.ts';
import type { Database } from './schema.ts';
import { createSqliteDialect, openSqlite } from './sqlite-dialect.ts';

export type { Database } from './schema.ts';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DatabaseKind = 'sqlite' | 'postgres';

// int8 is money in base units: exact, so bigint.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => BigInt(value));

/** Columns named `*_at` hold epoch milliseconds, well inside a double: hand them out as numbers. */
const epochMillisecondsAsNumbers: KyselyPlugin = {
  transformQuery: (args) => args.node,
  async transformResult(args) {
    for (const row of args.result.rows as Record<string, unknown>[]) {
      for (const key in row) {
        if (key.endsWith('_at') && typeof row[key] === 'bigint') row[key] = Number(row[key]);
      }
    }
    return args.result;
  },
};

export type DatabaseHandle = {
  db: Db;
  kind: DatabaseKind;
  close(): Promise<void>;
};

const named = Symbol('till:named');

/** Sends the prepared queries' SQL (prepared.ts) as named statements, so each connection parses and plans them once. */
function namingPreparedStatements(pool: pg.Pool): pg.Pool {
  const connect = pool.connect.bind(pool) as (...callback: unknown[]) => Promise<pg.PoolClient>;
  pool.connect = (async (...callback: unknown[]) => {
    if (callback.length) return connect(...callback); // pool.query's own use, left as it is
    const client = (await connect()) as pg.PoolClient & { [named]?: true };
    if (!client[named]) {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((text: unknown, ...rest: unknown[]) => {
        const name = typeof text === 'string' ? namedStatements.get(text) : undefined;
        return name ? query({ name, text, values: rest[0] }) : query(text, ...rest);
      }) as typeof client.query;
      client[named] = true;
    }
    return client;
  }) as typeof pool.connect;
  return pool;
}

export type OpenDatabaseOptions = {
  /** Told every statement sent to the database, failed ones too (tests read the request paths' queries with it). */
  onQuery?: (query: CompiledQuery) => void;
};

export function openDatabase(
  config: Pick<Config, 'databaseKind' | 'databaseUrl' | 'sqlitePath' | 'databasePoolSize'>,
  options: OpenDatabaseOptions = {},
): DatabaseHandle {
  const { onQuery } = options;
  const common: Omit<KyselyConfig, 'dialect'> = { plugins: [epochMillisecondsAsNumbers], ...(onQuery ? { log: (event) => onQuery(event.query) } : {}) };
  if (config.databaseKind === 'postgres') {
    const pool = namingPreparedStatements(new pg.Pool({ connectionString: config.databaseUrl, max: config.databasePoolSize }));
    // An idle client's error (the server restarting) must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...common });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  if (!config.sqlitePath) throw new Error('sqlitePath is required for SQLite');
  const db = new Kysely<Database>({ dialect: createSqliteDialect(openSqlite(config.sqlitePath)), ...common });
  return { db, kind: 'sqlite', close: () => db.destroy() };
}

/** True when the error is a unique-constraint violation on either engine. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; errcode?: string; message?: string };
  return (
    e?.code === '23505' ||
    e?.errcode === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.errcode === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    /UNIQUE constraint failed/.test(e?.message ?? '')
  );
}
