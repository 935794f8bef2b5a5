import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../config.ts';
import { waitFor } from '../testing/wait.ts';
import { type DatabaseHandle, openDatabase } from './index.ts';
import { migrateToLatest } from './migrate.ts';
import { WalSync } from './sqlite-dialect.ts';

/** A promise and the functions that settle it, for syncs the test finishes by hand. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const settledYet = async (promise: Promise<unknown>) => {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
};

/** A WalSync whose syncs end when the test says. */
function walSyncedByHand() {
  const syncs: ReturnType<typeof deferred>[] = [];
  const wal = new WalSync(() => {
    const sync = deferred();
    syncs.push(sync);
    return sync.promise;
  });
  return { wal, syncs };
}

describe('group commit: a writer waits for a sync of the WAL begun after its commit', () => {
  test('a caller arriving while a sync runs waits for the next one, which every such caller shares', async () => {
    const { wal, syncs } = walSyncedByHand();
    const first = wal.durable();
    const late = [wal.durable(), wal.durable(), wal.durable()];
    assert.equal(syncs.length, 1, 'one sync under way');
    syncs[0]!.resolve();
    await first;
    assert.equal(await settledYet(Promise.all(late)), false, 'the late callers are not answered by a sync that began before them');
    assert.equal(syncs.length, 2, 'they share one next sync');
    syncs[1]!.resolve();
    await Promise.all(late);
    assert.equal(syncs.length, 2);
  });

  test('a failed sync fails its own callers, and the next caller gets a sync of its own', async () => {
    const { wal, syncs } = walSyncedByHand();
    const failing = wal.durable();
    syncs[0]!.reject(new Error('EIO'));
    await assert.rejects(failing, /EIO/);
    const next = wal.durable();
    assert.equal(syncs.length, 2);
    syncs[1]!.resolve();
    await next;
  });

  describe('on a SQLite file', () => {
    let dir: string;
    let handle: DatabaseHandle;
    const datasyncs: ReturnType<typeof deferred>[] = [];
    let prototype: { datasync(): Promise<void> };
    let original: () => Promise<void>;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'till-durable-'));
      const probe = await open(join(dir, 'probe'), 'w');
      prototype = Object.getPrototypeOf(probe) as typeof prototype;
      await probe.close();
      original = prototype.datasync;
      handle = openDatabase(
        loadConfig({ TILL_DATABASE_URL: `sqlite:${join(dir, 'till.sqlite')}`, TILL_DATA_DIR: dir, TILL_SECRET_KEY: randomBytes(32).toString('hex') }),
      );
      await migrateToLatest(handle.db);
      await sql`create table durable_test (id text primary key)`.execute(handle.db);
      // Every fdatasync from now on waits until the test lets it finish (and then really syncs).
      prototype.datasync = function (this: unknown) {
        const sync = deferred();
        datasyncs.push(sync);
        return sync.promise.then(() => original.call(this));
      };
    });
    after(async () => {
      prototype.datasync = original;
      await handle.db.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    const write = (i: number) =>
      handle.db
        .insertInto('rate_limit_windows')
        .values({ limit_name: 'durable_test', subject: `s${i}`, window_start: 0, hits: 1, expires_at: 1 })
        .execute();
    const transaction = (i: number) =>
      handle.db.transaction().execute(async (trx) => {
        await sql`insert into durable_test (id) values (${`row${i}`})`.execute(trx);
      });

    test('runs WAL with synchronous = NORMAL: the commit itself does not fsync', async () => {
      const { rows } = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(handle.db);
      assert.equal(rows[0]!.synchronous, 1);
    });

    test('a committed transaction is answered only after the fdatasync that follows it, and the connection serves others meanwhile', async () => {
      datasyncs.length = 0;
      const committed = transaction(1);
      await waitFor(() => datasyncs.length > 0, 'the fdatasync after the commit', 10_000);
      assert.equal(await settledYet(committed), false, 'not answered before its sync ends');
      const { rows } = await sql<{ id: string }>`select id from durable_test where id = ${'row1'}`.execute(handle.db);
      assert.equal(rows[0]?.id, 'row1', 'a read is served while the sync runs, and waits for none');
      datasyncs[0]!.resolve();
      await committed;
    });

    test('concurrent transactions share syncs: twenty commits, at most two fdatasyncs', async () => {
      datasyncs.length = 0;
      const ids = Array.from({ length: 20 }, (_, i) => `row${100 + i}`);
      const commits = Promise.all(ids.map((_, i) => transaction(100 + i)));
      // Let the first sync finish once the others have committed (their rows are there); then the one they share.
      await waitFor(() => datasyncs.length > 0, 'the first fdatasync', 10_000);
      const committed = async () =>
        (await sql<{ n: number }>`select count(*) as n from durable_test where id in (${sql.join(ids)})`.execute(handle.db)).rows[0]!.n;
      await waitFor(async () => (await committed()) === ids.length, 'the twenty transactions to commit', 10_000);
      datasyncs[0]!.resolve();
      await waitFor(() => datasyncs.length > 1, 'the fdatasync the other commits share', 10_000);
      datasyncs[1]!.resolve();
      await commits;
      assert.equal(datasyncs.length, 2);
    });

    test('request-limit counts are not waited for', async () => {
      datasyncs.length = 0;
      await write(1);
      assert.equal(datasyncs.length, 0);
    });
  });
});
