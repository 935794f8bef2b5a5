// The first start of several sandbox instances at once on an empty PostgreSQL database: they
// migrate it together and exactly one of them makes the demo merchant and its user; none fails to start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEMO_USER_EMAIL } from '../../src/cli/serve.ts';
import { startCluster } from '../../src/testing/cluster.ts';
import { engines } from '../../src/testing/harness.ts';

const { skip } = engines.find((e) => e.engine === 'postgres')!;

test('5 sandbox instances started at once on an empty database: one demo merchant, every instance serving', { skip }, async () => {
  const cluster = await startCluster({ roles: ['all', 'api', 'worker', 'all', 'api'], firstStartOnEmptyDatabase: true });
  try {
    assert.ok(cluster.instances.every((instance) => instance.up && instance.starts === 1));
    const demo = await cluster.db.selectFrom('merchants').select('id').where('name', '=', 'Demo store (sandbox)').execute();
    assert.equal(demo.length, 1, 'one demo merchant');
    const users = await cluster.db.selectFrom('users').select(['merchant_id']).where('email', '=', DEMO_USER_EMAIL).execute();
    assert.deepEqual(users, [{ merchant_id: demo[0]!.id }], 'one demo user, of that merchant');
    assert.equal(cluster.grepOutput(/TEST API key/).length, 1, 'the demo key is shown once, by the instance that made it');
    assert.deepEqual(cluster.unexpectedExits(), []);
  } finally {
    await cluster.stop();
  }
});
