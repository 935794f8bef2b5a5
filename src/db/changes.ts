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
import { type Logger, pino } from 'pino';
import { listenForNotifications, type NotificationListener } from './notifications.ts';

/**
 * Committed changes to the rows that answers are built from, seen where every query passes: the
 * driver. Whatever code path updates or deletes a row of a watched table, its change is published
 * once the write is committed (at once outside a transaction, at COMMIT inside one, never after a
 * rollback), so a cache of such answers cannot miss a writer of this process. Other processes'
 * changes arrive another way: PostgreSQL triggers NOTIFY them (migration 0016, `CHANGES_CHANNEL`),
 * and on SQLite `PRAGMA data_version` tells that another connection committed. What a cache does with
 * all three is db/change-watch.ts.
 */
export const WATCHED_TABLES = ['payment_sessions', 'merchants', 'api_keys'] as const;
export type WatchedTable = (typeof WATCHED_TABLES)[number];
/** The rows the x402 answers are built from; `api_keys` is watched for the cache of authenticated keys (merchants/api-keys.ts). */
export const ANSWER_TABLES: readonly WatchedTable[] = ['payment_sessions', 'merchants'];

/** Rows of `table` changed: the ids when the write returned them, else `undefined` (any row may have). */
export type DataChange = { table: WatchedTable; ids: string[] | undefined };

/** The channel migrations 0016's and 0031's triggers notify, with payload `<table>:<id>`. */
export const CHANGES_CHANNEL = 'till_changes';

/** Reads a NOTIFY payload of `CHANGES_CHANNEL`; undefined for one of another shape. */
export function parseChangePayload(payload: string | undefined): DataChange | undefined {
  const colon = payload?.indexOf(':') ?? -1;
  if (!payload || colon < 0) return undefined;
  const table = payload.slice(0, colon) as WatchedTable;
  return isWatched(table) ? { table, ids: [payload.slice(colon + 1)] } : undefined;
}

type Listener = (change: DataChange) => void;

/** Told of other processes' committed changes (PostgreSQL NOTIFY); `change` undefined when any row may have changed. */
export type OthersFollower = {
  change(change: DataChange | undefined): void;
  /** The LISTEN is in place: from now on no change is missed until `lost`. */
  listening(): void;
  /** The LISTEN connection was lost: changes may be missed until the next `listening`. */
  lost(): void;
};

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
  /**
   * PostgreSQL only: follows other processes' committed changes through one LISTEN of
   * `CHANGES_CHANNEL` per handle, shared by every follower, opened with the first and closed with
   * the last (or the handle). Echoes of this handle's own writes are left out. Answers the unfollow.
   */
  followOthers: ((follower: OthersFollower, log?: Logger) => () => void) | undefined;
  /**
   * PostgreSQL only: resolves true once every change another process committed before the call has
   * reached the followers, false when that cannot be told (no LISTEN in place). Calls that come
   * while one round trip is on its way share the next one.
   */
  othersCaughtUp: (() => Promise<boolean>) | undefined;
};

export type TrackOptions = Partial<Pick<ChangeFeed, 'externalVersion' | 'isOwnBackend'>> & {
  /** PostgreSQL: where the LISTEN of other processes' changes connects. */
  databaseUrl?: string;
};

/** A lost LISTEN connection is opened again after this; meanwhile followers are told `lost`. */
const RELISTEN_MS = 1000;

/** One LISTEN for every follower of a handle. */
function othersHub(databaseUrl: string, isOwnBackend: ((processId: number) => boolean) | undefined) {
  const followers = new Set<OthersFollower>();
  let listener: NotificationListener | undefined;
  let listening = false;
  let log: Logger | undefined;
  const close = () => {
    listening = false;
    const closing = listener;
    listener = undefined;
    void closing?.close();
  };
  const follow = (follower: OthersFollower, followerLog?: Logger) => {
    log ??= followerLog;
    followers.add(follower);
    if (listening) follower.listening();
    listener ??= listenForNotifications(
      databaseUrl,
      CHANGES_CHANNEL,
      {
        onNotification: (payload, processId) => {
          // This handle's own write came back: the feed published it at commit, and publishing it
          // again would throw away what a cache filled since from the committed rows.
          if (isOwnBackend?.(processId)) return;
          const change = parseChangePayload(payload);
          for (const each of followers) each.change(change);
        },
        onListening: () => {
          listening = true;
          for (const each of followers) each.listening();
        },
        onLost: () => {
          listening = false;
          for (const each of followers) each.lost();
        },
      },
      { retryMs: RELISTEN_MS, log: log ?? pino({ level: 'silent' }), what: 'data changes' },
    );
    return () => {
      if (followers.delete(follower) && followers.size === 0) close();
    };
  };
  // The round trip on the wire, and the one after it for callers that came meanwhile (the one on
  // the wire may have been sent before their call, so it proves nothing to them).
  let sending: Promise<boolean> | undefined;
  let queued: Promise<boolean> | undefined;
  const send = (): Promise<boolean> => {
    const round: Promise<boolean> = (listener ? listener.sync() : Promise.reject(new Error('closed')))
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        if (sending === round) sending = undefined;
      });
    sending = round;
    return round;
  };
  const caughtUp = (): Promise<boolean> => {
    if (!listening) return Promise.resolve(false);
    if (!sending) return send();
    queued ??= sending.then(() => {
      queued = undefined;
      return send();
    });
    return queued;
  };
  return { follow, close, caughtUp };
}

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
export function trackChanges(dialect: Dialect, { externalVersion, isOwnBackend, databaseUrl }: TrackOptions = {}) {
  const listeners = new Map<Listener, readonly WatchedTable[]>();
  const others = databaseUrl === undefined ? undefined : othersHub(databaseUrl, isOwnBackend);
  const feed = {
    subscribe(listener: Listener, tables: readonly WatchedTable[] = ANSWER_TABLES) {
      listeners.set(listener, tables);
      return () => void listeners.delete(listener);
    },
    externalVersion,
    isOwnBackend,
    followOthers: others?.follow,
    othersCaughtUp: others?.caughtUp,
    publish(change: DataChange) {
      if (change.ids?.length === 0) return;
      for (const [listener, tables] of listeners) if (tables.includes(change.table)) listener(change);
    },
  };
  const tracked: Dialect = {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: () => trackingDriver(dialect.createDriver(), feed.publish, () => others?.close()),
  };
  return { dialect: tracked, register: <DB>(db: Kysely<DB>) => feeds.set(db, feed) };
}

function trackingDriver(inner: Driver, publish: (change: DataChange) => void, onDestroy: () => void): Driver {
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
    destroy: () => {
      onDestroy();
      return inner.destroy();
    },
  };
  // Savepoints pass through; a change rolled back to a savepoint is still published at commit (a harmless extra drop).
  if (inner.savepoint) driver.savepoint = (connection, name, compile) => inner.savepoint!(raw(connection), name, compile);
  if (inner.rollbackToSavepoint) driver.rollbackToSavepoint = (connection, name, compile) => inner.rollbackToSavepoint!(raw(connection), name, compile);
  if (inner.releaseSavepoint) driver.releaseSavepoint = (connection, name, compile) => inner.releaseSavepoint!(raw(connection), name, compile);
  return driver;
}
