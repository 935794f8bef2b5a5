import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import type { Db } from './index.ts';
import { namedStatements, prepareQuery } from './prepared.ts';

const merchantByName = prepareQuery((db: Db, params: { name: string }) => db.selectFrom('merchants').select(['id', 'name']).where('name', '=', params.name));

for (const { engine, skip } of engines) {
  describeOnEngine(`prepared queries on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test('one compiled query answers each call with that call’s values', async () => {
      const first = await service.merchant({ name: 'Prepared One' });
      const second = await service.merchant({ name: 'Prepared Two' });
      assert.equal((await merchantByName.executeTakeFirst(service.context.db, { name: 'Prepared One' }))?.id, first.merchantId);
      assert.equal((await merchantByName.executeTakeFirst(service.context.db, { name: 'Prepared Two' }))?.id, second.merchantId);
      assert.equal(await merchantByName.executeTakeFirst(service.context.db, { name: 'nobody' }), undefined);
      assert.equal((await merchantByName.execute(service.context.db, { name: 'Prepared One' })).length, 1);
    });

    test('a missing parameter and an inlined one are refused, not run', async () => {
      await assert.rejects(merchantByName.execute(service.context.db, {} as { name: string }), /parameter name is missing/);
      const inlined = prepareQuery((db: Db, params: { name: string }) => db.selectFrom('merchants').select('id').where(sql.lit(params.name), '=', 'x'));
      await assert.rejects(inlined.execute(service.context.db, { name: 'x' }), /inlined/);
    });

    // Named statements are PostgreSQL's; SQLite keeps its prepared statements in the dialect's cache.
    if (engine === 'postgres')
      test('on PostgreSQL a prepared query is a named statement of the connection, planned once', async () => {
        const single = await startTestService(engine, { TILL_DATABASE_POOL_SIZE: '1' });
        try {
          await single.merchant({ name: 'Named' });
          for (let i = 0; i < 3; i++) assert.ok(await merchantByName.executeTakeFirst(single.context.db, { name: 'Named' }));
          const text = single.context.db.selectFrom('merchants').select(['id', 'name']).where('name', '=', 'x').compile().sql;
          const name = namedStatements.get(text);
          const held = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements`.execute(single.context.db);
          assert.ok(name && held.rows.some((row) => row.name === name), JSON.stringify(held.rows));
        } finally {
          await single.stop();
        }
      });
  });
}
