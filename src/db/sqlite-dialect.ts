import { type FileHandle, open } from 'node:fs/promises';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteStatement,
  type TransactionSettings,
} from 'kysely';

/**
 * Kysely's SqliteDialect over the built-in `node:sqlite`, so no native addon is built.
 * Integers are read as bigint and turned back into numbers unless the column was
 * declared BIGINT, which makes results match PostgreSQL (int8 → bigint, int4 → number).
 */
function adaptStatement(statement: StatementSync): SqliteStatement {
  statement.setReadBigInts(true);
  const columns = statement.columns();
  const numberColumns = columns.filter((c) => !/^BIGINT$/i.test(c.type ?? '')).map((c) => c.name);
  const toRow = (row: unknown) => {
    const record = row as Record<string, unknown>;
    for (const name of numberColumns) {
      if (typeof record[name] === 'bigint') record[name] = Number(record[name]);
    }
    return record;
  };
  return {
    reader: columns.length > 0,
    all: (parameters) => statement.all(...(parameters as never[])).map(toRow),
    run: (parameters) => statement.run(...(parameters as never[])),
    *iterate(parameters) {
      for (const row of statement.iterate(...(parameters as never[]))) yield toRow(row);
    },
  };
}

export function openSqlite(path: string): DatabaseSync {
  const database = new DatabaseSync(path, { timeout: 10_000 });
  // A bounded page cache of 16 MiB (SQLite's default is 2 MiB) holds the hot index pages; the rest
  // of a grown database is read through the operating system's cache, not mmap, so the process's
  // memory does not grow with the file (file-backed mmap pages count in its RSS).
  database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384; PRAGMA mmap_size = 0;');
  // In WAL mode a commit's fsync is ours to make, off the event loop (WalSync): SQLite writes the WAL without it.
  if (walPathOf(database)) database.exec('PRAGMA synchronous = NORMAL;');
  return database;
}

/** The WAL file of a file database in WAL mode; undefined for an in-memory one (no WAL, nothing to sync). */
function walPathOf(database: DatabaseSync): string | undefined {
  const { journal_mode: mode } = database.prepare('PRAGMA journal_mode').get() as { journal_mode: string };
  const location = database.location();
  return mode === 'wal' && location ? `${location}-wal` : undefined;
}

/**
 * Group commit, off the event loop. With `synchronous = NORMAL` a commit writes the WAL but does not
 * fsync it; whoever wrote is answered only after an `fdatasync` of the WAL that began after its
 * commit (`durable()`), run in libuv's thread pool. Every commit made while one runs shares the
 * next, so N concurrent writers cost one fsync, and no request waits on the disk while the event loop
 * could serve another. A caller told that its write is committed is as safe from power loss as with
 * `synchronous = FULL` (SQLite itself syncs the WAL before a checkpoint and the database after one);
 * a killed process loses nothing either way, its writes being in the WAL already.
 */
export class WalSync {
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  readonly #sync: () => Promise<void>;

  /** `sync` makes durable everything written before it was called (an fdatasync of the WAL). */
  constructor(sync: () => Promise<void>) {
    this.#sync = sync;
  }

  /** Resolves once everything committed before the call is on disk; rejects if that sync failed. */
  durable(): Promise<void> {
    if (!this.#running) return this.#start();
    // The sync under way may have begun before this caller's commit: wait for the next one.
    this.#queued ??= this.#running.then(
      () => this.#next(),
      () => this.#next(),
    );
    return this.#queued;
  }

  #next(): Promise<void> {
    this.#queued = undefined;
    return this.#start();
  }

  #start(): Promise<void> {
    const run = this.#sync().finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }
}

/** The WAL's fdatasync, in libuv's thread pool, on a handle opened once (SQLite removes a WAL only when its last connection closes). */
function walFileSync(path: string): { sync: () => Promise<void>; close: () => Promise<void> } {
  let handle: Promise<FileHandle> | undefined;
  return {
    sync: async () => {
      handle ??= open(path, 'r+');
      await (await handle).datasync();
    },
    close: async () => {
      await (await handle)?.close();
    },
  };
}

/**
 * Statements after which nobody need wait for the WAL's sync: those that never change the database,
 * and the request limits' counts (src/limits), which guard against abuse and may lose their last
 * hits to a power cut. Any other statement may write, and makes its writer wait.
 */
const NEEDS_NO_SYNC = /^\s*(select|explain|begin|savepoint|release|pragma\s+[\w.]+\s*(\([^)]*\))?\s*;?\s*$|insert\s+into\s+"rate_limit_windows")/i;

/**
 * Kysely's SQLite driver, but a connection that wrote is handed back before the WAL's sync and the
 * writer waits for the sync after that: the single connection is free for others meanwhile.
 */
class DurableSqliteDriver implements Driver {
  #wrote = false;
  readonly #inner: Driver;
  readonly #database: DatabaseSync;
  readonly #wal: WalSync;
  readonly #closeWal: () => Promise<void>;

  constructor(inner: Driver, database: DatabaseSync, walPath: string) {
    this.#inner = inner;
    this.#database = database;
    const file = walFileSync(walPath);
    this.#wal = new WalSync(file.sync);
    this.#closeWal = file.close;
  }

  init(): Promise<void> {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#inner.acquireConnection();
    this.#wrote = false;
    return {
      executeQuery: <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        if (!NEEDS_NO_SYNC.test(query.sql)) this.#wrote = true;
        return connection.executeQuery<R>(query);
      },
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#inner.rollbackTransaction(connection);
    this.#wrote = false;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const wait = this.#wrote && !this.#database.isTransaction;
    this.#wrote = false;
    await this.#inner.releaseConnection(connection);
    if (wait) await this.#wal.durable();
  }

  async destroy(): Promise<void> {
    await this.#inner.destroy();
    await this.#closeWal();
  }
}

class DurableSqliteDialect extends SqliteDialect {
  readonly #database: DatabaseSync;
  readonly #walPath: string;

  constructor(adapter: SqliteDatabase, database: DatabaseSync, walPath: string) {
    super({ database: adapter });
    this.#database = database;
    this.#walPath = walPath;
  }

  override createDriver(): Driver {
    return new DurableSqliteDriver(super.createDriver(), this.#database, this.#walPath);
  }
}

const STATEMENT_CACHE_SIZE = 256;

export function createSqliteDialect(database: DatabaseSync): SqliteDialect {
  const statements = new Map<string, SqliteStatement>();
  const adapter: SqliteDatabase = {
    close: () => database.close(),
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        // A read-then-write transaction must wait for the write lock at BEGIN, not fail later with SQLITE_BUSY.
        statement = adaptStatement(database.prepare(sql === 'begin' ? 'begin immediate' : sql));
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
  const walPath = walPathOf(database);
  return walPath ? new DurableSqliteDialect(adapter, database, walPath) : new SqliteDialect({ database: adapter });
}
