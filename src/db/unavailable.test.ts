import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createTestDatabase, freePort } from '../testing/environment.ts';
import { describeOnEngine, engines } from '../testing/harness.ts';
import { proxiedPostgres, type TcpProxy } from '../testing/tcp-proxy.ts';
import { waitFor } from '../testing/wait.ts';
import { type DatabaseHandle, isDatabaseUnavailable, openDatabase } from './index.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => assert.fail('expected the statement to fail'),
    (error: unknown) => error,
  );

const { skip } = engines.find((e) => e.engine === 'postgres')!;

describeOnEngine('a database that cannot be reached, told apart from a wrong statement, on postgres', skip, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: TcpProxy;
  let handle: DatabaseHandle;
  // The pool's sockets to the proxy, to see when its connections have noticed a cut.
  const sockets: Socket[] = [];
  const connect = Socket.prototype.connect;
  before(async () => {
    database = await createTestDatabase('postgres');
    let url: string;
    ({ proxy, url } = await proxiedPostgres(database.url));
    Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
      const [first] = args;
      const port = typeof first === 'object' && first !== null ? (first as { port?: unknown }).port : first;
      if (Number(port) === proxy.port) sockets.push(this);
      return (connect as (...args: unknown[]) => Socket).apply(this, args);
    } as typeof connect;
    handle = openDatabase({ databaseKind: 'postgres', databaseUrl: url, sqlitePath: undefined, databasePoolSize: 2 });
  });
  after(async () => {
    Socket.prototype.connect = connect;
    proxy?.restore();
    await handle?.close();
    await proxy?.close();
    await database?.drop();
  });

  test('a wrong statement is not an outage', async () => {
    assert.equal(isDatabaseUnavailable(await failure(sql`select * from no_such_table`.execute(handle.db))), false);
    assert.equal(isDatabaseUnavailable(await failure(sql`select 1/0`.execute(handle.db))), false);
  });

  test('a connection dropped mid-transaction, a refused one and a closed port are outages; the pool recovers', async () => {
    const inTransaction = handle.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      proxy.cut();
      // The next statement comes after the connection has seen the cut: between two statements, not during one.
      await waitFor(
        () => sockets.length > 0 && sockets.every((socket) => socket.readableEnded || socket.destroyed),
        'the pool to see its connections cut',
        10_000,
      );
      await sql`select 2`.execute(trx);
    });
    assert.equal(isDatabaseUnavailable(await failure(inTransaction)), true);
    assert.equal(isDatabaseUnavailable(await failure(sql`select 3`.execute(handle.db))), true);
    proxy.restore();
    assert.deepEqual((await sql<{ n: number }>`select 4 as n`.execute(handle.db)).rows, [{ n: 4 }]);

    const nowhere = openDatabase({
      databaseKind: 'postgres',
      databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
      sqlitePath: undefined,
      databasePoolSize: 1,
    });
    try {
      assert.equal(isDatabaseUnavailable(await failure(sql`select 1`.execute(nowhere.db))), true);
    } finally {
      await nowhere.close();
    }
  });
});

test('an SQLite error is never taken for an outage', async () => {
  const database = await createTestDatabase('sqlite');
  const handle = openDatabase({ databaseKind: 'sqlite', databaseUrl: database.url, sqlitePath: database.url.slice('sqlite:'.length), databasePoolSize: 1 });
  try {
    assert.equal(isDatabaseUnavailable(await failure(sql`select * from no_such_table`.execute(handle.db))), false);
  } finally {
    await handle.close();
    await database.drop();
  }
});
