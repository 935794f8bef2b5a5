import type { CompiledQuery, DatabaseConnection, Dialect, Driver, Kysely, QueryResult, TransactionSettings } from 'kysely';

/**
 * Committed changes to the rows that answers are built from, seen where every query passes: the
 * driver. Whatever code path updates or deletes a row of a watched table, its change is published
 * once the write is committed (at once outside a transaction, at COMMIT inside one, never after a
 * rollback), so a cache of such answers cannot miss a writer of this process. Other processes'
 * changes arrive another way: PostgreSQL triggers NOTIFY them (migration 0016, `CHANGES_CHANNEL`),
 * and on SQLite `PRAGMA data_version` tells that another connection committed.
 */
export const WATCHED_TABLES = ['payment_sessions', 'merchants'] as const;
export type WatchedTable = (typeof WATCHED_TABLES)[number];

/** Rows of `table` changed: the ids when the write returned them, else `undefined` (any row may have). */
export type DataChange = { table: WatchedTable; ids: string[] | undefined };

/** The channel migration 0016's triggers notify, with payload `<table>:<id>`. */
export const CHANGES_CHANNEL = 'till_changes';

/** Reads a NOTIFY payload of `CHANGES_CHANNEL`; undefined for one of another shape. */
export function parseChangePayload(payload: string | undefined): DataChange | undefined {
  const colon = payload?.indexOf(':') ?? -1;
  if (!payload || colon < 0) return undefined;
  const table = payload.slice(0, colon) as WatchedTable;
  return WATCHED_TABLES.includes(table) ? { table, ids: [payload.slice(colon + 1)] } : undefined;
}

type Listener = (change: DataChange) => void;

export type ChangeFeed = {
  subscribe(listener: Listener): () => void;
  /** SQLite only: `PRAGMA data_version`, which moves when another connection commits. */
  externalVersion: (() => number) | undefined;
};

// Keyed by the Kysely handle (any database type): a handle's feed lives and goes with it.
const feeds = new WeakMap<object, ChangeFeed & { publish(change: DataChange): void }>();

/** The committed changes of this handle's writes; undefined for a handle not opened by openDatabase. */
export function changeFeed<DB>(db: Kysely<DB>): ChangeFeed | undefined {
  return feeds.get(db);
}

/** Which watched table a compiled write updates or deletes from; undefined for reads, inserts and other tables. */
function writtenTable(query: CompiledQuery): WatchedTable | undefined {
  const kind = query.query.kind;
  if (kind === 'SelectQueryNode' || kind === 'InsertQueryNode') return undefined;
  if (kind === 'UpdateQueryNode' || kind === 'DeleteQueryNode') {
    for (const table of WATCHED_TABLES) if (query.sql.includes(table)) return table;
    return undefined;
  }
  // Raw SQL: the tables it updates or deletes from (`ON CONFLICT DO UPDATE SET` names none), so a
  // statement that only reads a watched table, or inserts into one, drops nothing.
  for (const [, target] of query.sql.matchAll(/\b(?:update|delete\s+from)\s+"?(\w+)"?/gi))
    if ((WATCHED_TABLES as readonly string[]).includes(target!.toLowerCase())) return target!.toLowerCase() as WatchedTable;
  return undefined;
}

function changedIds(query: CompiledQuery, result: QueryResult<unknown>): string[] | undefined {
  const rows = result.rows as { id?: unknown }[];
  if (rows.length === 0) {
    // A write with RETURNING that returns nothing changed nothing (SQLite reports no count for it).
    const returning = (query.query as { returning?: unknown }).returning !== undefined;
    return returning || result.numAffectedRows === 0n ? [] : undefined;
  }
  const ids = rows.map((row) => row.id);
  return ids.every((id) => typeof id === 'string') ? (ids as string[]) : undefined;
}

/** Wraps a dialect so that its driver reports committed writes of watched tables; `register` is called with the handle's publisher. */
export function trackChanges(dialect: Dialect, externalVersion?: () => number) {
  const listeners = new Set<Listener>();
  const feed = {
    subscribe(listener: Listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    externalVersion,
    publish(change: DataChange) {
      if (change.ids?.length === 0) return;
      for (const listener of listeners) listener(change);
    },
  };
  const tracked: Dialect = {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: () => trackingDriver(dialect.createDriver(), feed.publish),
  };
  return { dialect: tracked, register: <DB>(db: Kysely<DB>) => feeds.set(db, feed) };
}

function trackingDriver(inner: Driver, publish: (change: DataChange) => void): Driver {
  const wrappers = new WeakMap<DatabaseConnection, DatabaseConnection>();
  const unwrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
  // Changes made inside an open transaction, by connection, published at its commit.
  const pending = new WeakMap<DatabaseConnection, DataChange[]>();
  const raw = (connection: DatabaseConnection) => unwrapped.get(connection) ?? connection;

  const wrap = (connection: DatabaseConnection): DatabaseConnection => {
    let wrapper = wrappers.get(connection);
    if (wrapper) return wrapper;
    const outer: DatabaseConnection = {
      async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        const result = await connection.executeQuery<R>(query);
        const table = writtenTable(query);
        if (table) {
          const change = { table, ids: changedIds(query, result) };
          const open = pending.get(outer);
          if (open) open.push(change);
          else publish(change);
        }
        return result;
      },
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
    wrapper = outer;
    wrappers.set(connection, wrapper);
    unwrapped.set(wrapper, connection);
    return wrapper;
  };

  const driver: Driver = {
    init: () => inner.init(),
    acquireConnection: async () => wrap(await inner.acquireConnection()),
    async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
      await inner.beginTransaction(raw(connection), settings);
      pending.set(connection, []);
    },
    async commitTransaction(connection: DatabaseConnection) {
      const changes = pending.get(connection) ?? [];
      pending.delete(connection);
      await inner.commitTransaction(raw(connection));
      for (const change of changes) publish(change);
    },
    async rollbackTransaction(connection: DatabaseConnection) {
      pending.delete(connection);
      await inner.rollbackTransaction(raw(connection));
    },
    releaseConnection: (connection) => inner.releaseConnection(raw(connection)),
    destroy: () => inner.destroy(),
  };
  // Savepoints pass through; a change rolled back to a savepoint is still published at commit (a harmless extra drop).
  if (inner.savepoint) driver.savepoint = (connection, name, compile) => inner.savepoint!(raw(connection), name, compile);
  if (inner.rollbackToSavepoint) driver.rollbackToSavepoint = (connection, name, compile) => inner.rollbackToSavepoint!(raw(connection), name, compile);
  if (inner.releaseSavepoint) driver.releaseSavepoint = (connection, name, compile) => inner.releaseSavepoint!(raw(connection), name, compile);
  return driver;
}
