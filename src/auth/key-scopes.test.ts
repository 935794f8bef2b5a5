// A restricted API key does what its scopes allow and nothing else, on every route of the payment
// API: the routes and the scope each needs are read from /openapi.json, so a new route is tried as
// soon as it is documented. A refusal is 403 `insufficient_scope` naming the scope; a full key, the
// default, still does everything.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { API_KEY_SCOPE_NAMES, type ApiKeyScope } from '../common/api-key-scopes.ts';
import { createApiKey } from '../merchants/api-keys.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';

type Operation = { method: string; path: string; scope: ApiKeyScope };

const SESSION = { amount: 25.5, currency: 'USD', concept: 'Order 1001', orderType: 'TRANSIENT' };

for (const { engine, skip } of engines) {
  describeOnEngine(`restricted API keys on ${engine}`, skip, () => {
    let service: TestService;
    let merchantId: string;
    let operations: Operation[];
    before(async () => {
      service = await startTestService(engine);
      ({ merchantId } = await service.merchant());
      const document = (await service.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
        paths: Record<string, Record<string, { security?: { apiKey?: string[] }[] }>>;
      };
      operations = Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods).flatMap(([method, operation]) => {
          const needed = operation.security?.find((requirement) => requirement.apiKey)?.apiKey;
          if (!needed) return [];
          assert.equal(needed.length, 1, `${method} ${path} names the one scope it needs`);
          return [{ method: method.toUpperCase(), path, scope: needed[0] as ApiKeyScope }];
        }),
      );
    });
    after(() => service?.stop());

    const keyWith = async (scopes?: ApiKeyScope[]) => (await createApiKey(service.context.db, merchantId, 'test', Date.now(), scopes)).apiKey;
    const call = (operation: Operation, apiKey: string, body?: unknown) =>
      service.app.inject({
        method: operation.method as 'GET',
        // Path parameters name nothing that exists: a key let through is answered 404, never 403.
        url: operation.path.replace(/\{\w+\}/g, 'evt_unknown'),
        headers: { 'x-sc-apikey': apiKey, ...(operation.method === 'GET' ? {} : { 'content-type': 'application/json' }) },
        ...(operation.method === 'GET' ? {} : { payload: JSON.stringify(body ?? {}) }),
      });

    test('the API documents a scope for every route taking a key, each one a key can be given', () => {
      assert.ok(operations.length >= 10, `${operations.length} API routes`);
      for (const operation of operations) assert.ok(API_KEY_SCOPE_NAMES.includes(operation.scope), `${operation.method} ${operation.path}: ${operation.scope}`);
      assert.deepEqual([...new Set(operations.map((o) => o.scope))].sort(), [...API_KEY_SCOPE_NAMES].sort(), 'every scope is needed by some route');
    });

    test('on every API route, a key without the route’s scope is refused 403 naming it, and a key with only that scope is let through', async () => {
      for (const operation of operations) {
        const what = `${operation.method} ${operation.path}`;
        const outside = await keyWith(API_KEY_SCOPE_NAMES.filter((scope) => scope !== operation.scope));
        // Twice: the second answer comes from the key as remembered after its first use.
        for (const attempt of [1, 2]) {
          const refused = await call(operation, outside);
          assert.equal(refused.statusCode, 403, `${what} outside its scope (attempt ${attempt}): ${refused.body}`);
          const { error } = refused.json() as { error: { code: string; message: string } };
          assert.equal(error.code, 'insufficient_scope', what);
          assert.match(error.message, new RegExp(`lacks the scope ${operation.scope}\\b`), what);
        }
        const inside = await keyWith([operation.scope]);
        for (const attempt of [1, 2]) {
          const allowed = await call(operation, inside);
          assert.ok(![401, 403].includes(allowed.statusCode), `${what} inside its scope (attempt ${attempt}): ${allowed.statusCode} ${allowed.body}`);
        }
        const full = await call(operation, await keyWith());
        assert.ok(![401, 403].includes(full.statusCode), `${what} with a full key: ${full.statusCode}`);
      }
    });

    test('a session is created with a sessions:write key, read back with sessions:read only; a read-only key creates nothing', async () => {
      const create = operations.find((o) => o.method === 'POST' && o.path === '/api/checkout/v2/payment_session')!;
      const writer = await keyWith(['sessions:write']);
      const created = await call(create, writer, SESSION);
      assert.equal(created.statusCode, 201, created.body);
      const sessionId = (created.json() as { sessionId: string }).sessionId;
      const read = (apiKey: string) =>
        service.app.inject({ method: 'GET', url: `/api/checkout/v2/payment_session/${sessionId}`, headers: { 'x-sc-apikey': apiKey } });
      assert.equal((await read(await keyWith(['sessions:read']))).statusCode, 200);
      assert.equal((await read(writer)).statusCode, 403, 'sessions:write does not read');

      const count = async () =>
        Number(
          (
            await service.context.db
              .selectFrom('payment_sessions')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('merchant_id', '=', merchantId)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const before = await count();
      const reader = await keyWith(['sessions:read', 'events:read']);
      for (const attempt of [1, 2]) {
        const refused = await call(create, reader, { ...SESSION, concept: `refused ${attempt}` });
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal((refused.json() as { error: { code: string } }).error.code, 'insufficient_scope');
      }
      assert.equal(await count(), before, 'no session written');
    });
  });
}
