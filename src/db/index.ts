import { type CompiledQuery, Kysely, type KyselyConfig, type KyselyPlugin, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import { trackChanges } from './changes.ts';
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

const CONNECT_TIMEOUT_MS = 5_000;

export function openDatabase(
  config: Pick<Config, 'databaseKind' | 'databaseUrl' | 'sqlitePath' | 'databasePoolSize'>,
  options: OpenDatabaseOptions = {},
): DatabaseHandle {
  const { onQuery } = options;
  const common: Omit<KyselyConfig, 'dialect'> = { plugins: [epochMillisecondsAsNumbers], ...(onQuery ? { log: (event) => onQuery(event.query) } : {}) };
  if (config.databaseKind === 'postgres') {
    // A database that stops answering fails a request within seconds (a 503), rather than holding it.
    const pool = namingPreparedStatements(
      new pg.Pool({
        connectionString: config.databaseUrl,
        max: config.databasePoolSize,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        keepAlive: true,
      }),
    );
    // An idle client's error (the server restarting) must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    // The backend process id of each connection, known from its startup (BackendKeyData, the
    // `pg_backend_pid()` of a direct connection) before the pool hands it out, so before it writes:
    // the change feed tells its own NOTIFYs from other writers' by it.
    const backends = new Set<number>();
    const backendOf = (client: pg.PoolClient) => (client as pg.PoolClient & { processID?: number | null }).processID;
    pool.on('connect', (client) => {
      // Nor may a checked-out client's error, lost between two statements of a transaction (the pool
      // listens only to idle ones): its next statement fails as not queryable, and the pool drops it on release.
      client.on('error', () => {});
      const pid = backendOf(client);
      if (typeof pid === 'number') backends.add(pid);
    });
    pool.on('remove', (client) => {
      const pid = backendOf(client);
      if (typeof pid === 'number') backends.delete(pid);
    });
    const tracked = trackChanges(new PostgresDialect({ pool }), {
      isOwnBackend: (pid) => backends.has(pid),
      databaseUrl: config.databaseUrl,
    });
    const db = new Kysely<Database>({ dialect: tracked.dialect, ...common });
    tracked.register(db);
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  if (!config.sqlitePath) throw new Error('sqlitePath is required for SQLite');
  const database = openSqlite(config.sqlitePath);
  const dataVersion = database.prepare('PRAGMA data_version');
  const tracked = trackChanges(createSqliteDialect(database), {
    externalVersion: () => Number((dataVersion.get() as { data_version: number }).data_version),
  });
  const db = new Kysely<Database>({ dialect: tracked.dialect, ...common });
  tracked.register(db);
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

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// PostgreSQL: shutting down, starting up, or out of connection slots.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const LOST_CONNECTION = /Connection terminated|timeout exceeded when trying to connect|not queryable|Client was closed|Connection ended/i;

/**
 * True when the error says the database cannot be reached (refused, dropped, timed out, shutting
 * down) rather than that a statement was wrong: the request can be answered 503 and retried.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof e?.code === 'string' && (UNREACHABLE_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.has(e.code) || e.code.startsWith('08'))) return true;
  if (typeof e?.message === 'string' && LOST_CONNECTION.test(e.message)) return true;
  return Array.isArray(e?.errors) && e.errors.some(isDatabaseUnavailable);
}
