import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createTestDatabase } from '../testing/environment.ts';
import { describeOnEngine, engines } from '../testing/harness.ts';
import { EMAIL_POLICY, emailSubject, recordFailure, waitBeforeAttempt } from './throttle.ts';

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

    test('failures racing on two instances are each counted, and the last one locks', async () => {
      const subject = emailSubject('racer@example.com');
      const now = 1_700_000_000_000;
      await Promise.all(Array.from({ length: EMAIL_POLICY.lockAfter }, (_, i) => recordFailure(handles[i % 2]!.db, [subject], now)));
      const row = await handles[0]!.db.selectFrom('sign_in_throttle').selectAll().where('subject', '=', subject.key).executeTakeFirstOrThrow();
      assert.equal(row.failures, EMAIL_POLICY.lockAfter);
      assert.equal(await waitBeforeAttempt(handles[1]!.db, [subject], now), EMAIL_POLICY.lockMs);
    });

    test('a count forgotten starts again at one', async () => {
      const subject = emailSubject('forgotten@example.com');
      const now = 1_700_000_000_000;
      for (let i = 0; i < 5; i++) await recordFailure(handles[0]!.db, [subject], now);
      await recordFailure(handles[1]!.db, [subject], now + EMAIL_POLICY.forgetAfterMs + 60_000);
      const row = await handles[0]!.db.selectFrom('sign_in_throttle').selectAll().where('subject', '=', subject.key).executeTakeFirstOrThrow();
      assert.equal(row.failures, 1);
    });
  });
}
