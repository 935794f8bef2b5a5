import {
  AliasNode,
  type CompiledQuery,
  type DatabaseConnection,
  DeleteQueryNode,
  type Dialect,
  type Driver,
  FromNode,
  InsertQueryNode,
  type Kysely,
  ListNode,
  MergeQueryNode,
  type OperationNode,
  type QueryResult,
  RawNode,
  TableNode,
  type TransactionSettings,
  UpdateQueryNode,
  type WithNode,
} from 'kysely';

/**
 * Committed changes to the rows that answers are built from, seen where every query passes: the
 * driver. Whatever code path updates or deletes a row of a watched table, its change is published
 * once the write is committed (at once outside a transaction, at COMMIT inside one, never after a
 * rollback), so a cache of such answers cannot miss a writer of this process. Other processes'
 * changes arrive another way: PostgreSQL triggers NOTIFY them (migration 0016, `CHANGES_CHANNEL`),
 * and on SQLite `PRAGMA data_version` tells that another connection committed.
 */
export const WATCHED_TABLES = ['payment_sessions', 'merchants', 'api_keys'] as const;
export type WatchedTable = (typeof WATCHED_TABLES)[number];
/**
 * What a subscriber is told of unless it names other tables: the rows the x402 answers are built
 * from. `api_keys` is watched for the cache of authenticated keys (merchants/api-keys.ts), which
 * names it; PostgreSQL notifies no change of it (that cache is SQLite's only).
 */
export const ANSWER_TABLES: readonly WatchedTable[] = ['payment_sessions', 'merchants'];

/** Rows of `table` changed: the ids when the write returned them, else `undefined` (any row may have). */
export type DataChange = { table: WatchedTable; ids: string[] | undefined };

/** The channel migration 0016's triggers notify, with payload `<table>:<id>`. */
export const CHANGES_CHANNEL = 'till_changes';

/** Reads a NOTIFY payload of `CHANGES_CHANNEL`; undefined for one of another shape. */
export function parseChangePayload(payload: string | undefined): DataChange | undefined {
  const colon = payload?.indexOf(':') ?? -1;
  if (!payload || colon < 0) return undefined;
  const table = payload.slice(0, colon) as WatchedTable;
  return ANSWER_TABLES.includes(table) ? { table, ids: [payload.slice(colon + 1)] } : undefined;
}

type Listener = (change: DataChange) => void;

export type ChangeFeed = {
  /** Tells `listener` each committed change to one of `tables`; answers the unsubscribe. */
  subscribe(listener: Listener, tables?: readonly WatchedTable[]): () => void;
  /** SQLite only: `PRAGMA data_version`, which moves when another connection commits. */
  externalVersion: (() => number) | undefined;
  /**
   * PostgreSQL only: true for the backend process id of one of this handle's own connections. The
   * NOTIFY of such a connection's write (a notification's `processId`) is an echo: the feed
   * published that write at its commit already.
   */
  isOwnBackend: ((processId: number) => boolean) | undefined;
};

export type TrackOptions = Partial<Pick<ChangeFeed, 'externalVersion' | 'isOwnBackend'>>;

// Keyed by the Kysely handle (any database type): a handle's feed lives and goes with it.
const feeds = new WeakMap<object, ChangeFeed & { publish(change: DataChange): void }>();

/** The committed changes of this handle's writes; undefined for a handle not opened by openDatabase. */
export function changeFeed<DB>(db: Kysely<DB>): ChangeFeed | undefined {
  return feeds.get(db);
}

const isWatched = (name: string): name is WatchedTable => (WATCHED_TABLES as readonly string[]).includes(name);

/** The tables a table reference names: `t`, `schema.t`, `t as a`, and lists of them (the schema is not compared). */
function tableNames(node: OperationNode | undefined): string[] {
  if (!node) return [];
  if (TableNode.is(node)) return [node.table.identifier.name];
  if (AliasNode.is(node)) return tableNames(node.node);
  if (FromNode.is(node)) return node.froms.flatMap(tableNames);
  if (ListNode.is(node)) return node.items.flatMap(tableNames);
  return [];
}

// Raw SQL: the tables it updates or deletes from (`UPDATE [ONLY] [schema.]t`, `DELETE FROM …`;
// `ON CONFLICT DO UPDATE SET` names none), so a statement that only reads a watched table, or
// inserts into one, drops nothing.
const RAW_WRITE = /\b(?:update|delete\s+from)\s+(?:only\s+)?(?:"?\w+"?\s*\.\s*)?"?(\w+)"?/gi;
const rawTables = (sql: string) => Array.from(sql.matchAll(RAW_WRITE), ([, target]) => target!.toLowerCase());

/** The table a statement itself updates or deletes from (UPDATE, DELETE, MERGE, an upserting INSERT); tables it only reads are not. */
function ownTargets(node: OperationNode): string[] {
  if (RawNode.is(node)) return rawTables(node.sqlFragments.join(' '));
  if (UpdateQueryNode.is(node)) return tableNames(node.table);
  if (DeleteQueryNode.is(node)) return tableNames(node.from);
  if (MergeQueryNode.is(node)) return tableNames(node.into);
  if (InsertQueryNode.is(node) && (node.onConflict?.updates?.length || node.onDuplicateKey)) return tableNames(node.into);
  return [];
}

/** The targets of a statement's data-modifying CTEs (PostgreSQL allows them only at the top level). */
const cteTargets = (node: OperationNode): string[] =>
  ((node as { with?: WithNode }).with?.expressions ?? []).flatMap((cte) => [...ownTargets(cte.expression), ...cteTargets(cte.expression)]);

/**
 * The watched tables a compiled statement updates or deletes from, read from its query node, so a
 * table it merely mentions (a subquery, FROM, USING, a join) is never taken for its target; raw SQL
 * (`sql\`…\``) by RAW_WRITE. `rowsAreIds`: the rows it returns are the written rows (no CTE wrote a
 * watched table), so their ids say which rows changed.
 */
export function writtenTables(query: CompiledQuery): { tables: WatchedTable[]; rowsAreIds: boolean } {
  const node = query.query;
  if (RawNode.is(node)) return { tables: [...new Set(rawTables(query.sql).filter(isWatched))], rowsAreIds: true };
  const fromCtes = cteTargets(node).filter(isWatched);
  return { tables: [...new Set([...ownTargets(node).filter(isWatched), ...fromCtes])], rowsAreIds: fromCtes.length === 0 };
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
export function trackChanges(dialect: Dialect, { externalVersion, isOwnBackend }: TrackOptions = {}) {
  const listeners = new Map<Listener, readonly WatchedTable[]>();
  const feed = {
    subscribe(listener: Listener, tables: readonly WatchedTable[] = ANSWER_TABLES) {
      listeners.set(listener, tables);
      return () => void listeners.delete(listener);
    },
    externalVersion,
    isOwnBackend,
    publish(change: DataChange) {
      if (change.ids?.length === 0) return;
      for (const [listener, tables] of listeners) if (tables.includes(change.table)) listener(change);
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
        const { tables, rowsAreIds } = writtenTables(query);
        let result: QueryResult<R>;
        try {
          result = await connection.executeQuery<R>(query);
        } catch (error) {
          // Outside a transaction a write whose answer was lost may still have committed: drop what it may have changed.
          if (!pending.has(outer)) for (const table of tables) publish({ table, ids: undefined });
          throw error;
        }
        for (const table of tables) {
          const change = { table, ids: rowsAreIds ? changedIds(query, result) : undefined };
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
      try {
        await inner.commitTransaction(raw(connection));
      } finally {
        // A COMMIT whose answer was lost may have committed: its changes are published either way.
        for (const change of changes) publish(change);
      }
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
