// Five `till serve` processes started at once on an empty PostgreSQL database (src/testing/cluster.ts):
// they migrate it together, exactly one makes the sandbox's demo merchant and its user, and none
// fails to start. Then the balancer of the harness itself: round-robin over the instances serving
// the API, skipping one while it is down.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEMO_USER_EMAIL } from '../../src/cli/demo.ts';
import { type Cluster, startCluster } from '../../src/testing/cluster.ts';
import { describeOnEngine, engines } from '../../src/testing/harness.ts';

const { skip } = engines.find((e) => e.engine === 'postgres')!;

describeOnEngine('a cluster started at once on an empty PostgreSQL database', skip, () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await startCluster({ roles: ['all', 'api', 'worker', 'all', 'api'], firstStartOnEmptyDatabase: true });
  });
  after(() => cluster?.stop());

  test('5 sandbox instances: one demo merchant, every instance serving', async () => {
    assert.ok(cluster.instances.every((instance) => instance.up && instance.starts === 1));
    const demo = await cluster.db.selectFrom('merchants').select('id').where('name', '=', 'Demo store (sandbox)').execute();
    assert.equal(demo.length, 1, 'one demo merchant');
    const users = await cluster.db.selectFrom('users').select(['merchant_id']).where('email', '=', DEMO_USER_EMAIL).execute();
    assert.deepEqual(users, [{ merchant_id: demo[0]!.id }], 'one demo user, of that merchant');
    assert.equal(cluster.grepOutput(/TEST API key/).length, 1, 'the demo key is shown once, by the instance that made it');
    assert.deepEqual(cluster.unexpectedExits(), []);
  });

  test('requests go round-robin to the instances serving the API, skipping one that is down', async () => {
    const answeredBy = async (count: number) => {
      const seen: number[] = [];
      for (let i = 0; i < count; i++) {
        const response = await cluster.request('/readyz');
        assert.equal(response.status, 200);
        seen.push(response.instance);
      }
      return seen.sort();
    };
    assert.deepEqual(await answeredBy(8), [0, 0, 1, 1, 3, 3, 4, 4], 'never the worker');
    await cluster.kill(1);
    assert.equal(cluster.instances[1]!.up, false);
    assert.deepEqual(await answeredBy(6), [0, 0, 3, 3, 4, 4]);
    await cluster.restart(1);
    assert.equal(cluster.instances[1]!.starts, 2);
    assert.deepEqual(await answeredBy(8), [0, 0, 1, 1, 3, 3, 4, 4]);
    assert.deepEqual(cluster.unexpectedExits(), [], 'a kill by the harness is not a crash');
  });
});
