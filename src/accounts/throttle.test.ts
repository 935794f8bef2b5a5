import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createTestDatabase } from '../testing/environment.ts';
import { describeOnEngine, engines } from '../testing/harness.ts';
import { delayAfter, EMAIL_POLICY, emailFromIpSubject, reserveAttempt } from './throttle.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`sign-in throttle shared by instances on ${engine}`, skip, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    const handles: DatabaseHandle[] = [];
    before(async () => {
      database = await createTestDatabase(engine);
      // Two connections to one database, as two instances have.
      for (let i = 0; i < 2; i++) {
        const settings =
          engine === 'sqlite'
            ? { databaseKind: 'sqlite' as const, databaseUrl: database.url, sqlitePath: database.url.slice('sqlite:'.length), databasePoolSize: 1 }
            : { databaseKind: 'postgres' as const, databaseUrl: database.url, sqlitePath: undefined, databasePoolSize: 5 };
        handles.push(openDatabase(settings));
      }
      await migrateToLatest(handles[0]!.db);
    });
    after(async () => {
      for (const handle of handles) await handle.close();
      await database?.drop();
    });

    test('attempts racing on two instances are each reserved, and none past the one that starts the wait', async () => {
      const subject = emailFromIpSubject('racer@example.com', '192.0.2.1');
      const now = 1_700_000_000_000;
      const waits = await Promise.all(Array.from({ length: 40 }, (_, i) => reserveAttempt(handles[i % 2]!.db, [subject], now)));
      assert.equal(waits.filter((wait) => wait === 0).length, EMAIL_POLICY.freeFailures + 1);
      const row = await handles[0]!.db.selectFrom('sign_in_throttle').selectAll().where('subject', '=', subject.key).executeTakeFirstOrThrow();
      assert.equal(row.failures, EMAIL_POLICY.freeFailures + 1);
      assert.equal(Number(row.next_attempt_at), now + delayAfter(EMAIL_POLICY.freeFailures + 1, EMAIL_POLICY));
      // Spaced out past every wait, the attempts go on until the lock.
      let clock = now;
      for (let n = EMAIL_POLICY.freeFailures + 2; n <= EMAIL_POLICY.lockAfter; n++) {
        clock += EMAIL_POLICY.slowdownMaxMs;
        assert.equal(await reserveAttempt(handles[n % 2]!.db, [subject], clock), 0);
      }
      assert.equal(await reserveAttempt(handles[1]!.db, [subject], clock), EMAIL_POLICY.lockMs);
    });

    test('a count forgotten starts again at one', async () => {
      const subject = emailFromIpSubject('forgotten@example.com', '192.0.2.1');
      const now = 1_700_000_000_000;
      for (let i = 0; i < 4; i++) await reserveAttempt(handles[0]!.db, [subject], now);
      assert.equal(await reserveAttempt(handles[1]!.db, [subject], now + EMAIL_POLICY.forgetAfterMs + 60_000), 0);
      const row = await handles[0]!.db.selectFrom('sign_in_throttle').selectAll().where('subject', '=', subject.key).executeTakeFirstOrThrow();
      assert.equal(row.failures, 1);
    });
  });
}
