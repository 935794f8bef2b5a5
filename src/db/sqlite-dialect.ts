import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { type SqliteDatabase, SqliteDialect, type SqliteStatement } from 'kysely';

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
  // A grown database's hot index pages stay in memory: 64 MiB of page cache (SQLite's default is
  // 2 MiB) and reads through mmap, so a lookup costs about the same at a million rows as at ten thousand.
  database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA mmap_size = 268435456;');
  return database;
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
  return new SqliteDialect({ database: adapter });
}
