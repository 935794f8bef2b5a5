import { Kysely, type KyselyPlugin, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
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

const CONNECT_TIMEOUT_MS = 5_000;

export function openDatabase(config: Pick<Config, 'databaseKind' | 'databaseUrl' | 'sqlitePath' | 'databasePoolSize'>): DatabaseHandle {
  if (config.databaseKind === 'postgres') {
    // A database that stops answering fails a request within seconds (a 503), rather than holding it.
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    // An idle client's error (the server restarting) must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    // Nor may a checked-out client's, lost between two statements of a transaction (the pool listens
    // only to idle ones): its next statement fails as not queryable, and the pool drops it on release.
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [epochMillisecondsAsNumbers] });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  if (!config.sqlitePath) throw new Error('sqlitePath is required for SQLite');
  const db = new Kysely<Database>({ dialect: createSqliteDialect(openSqlite(config.sqlitePath)), plugins: [epochMillisecondsAsNumbers] });
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
