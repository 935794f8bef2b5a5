import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { validate as validateStrictly } from '@readme/openapi-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import { ERROR_CATALOGUE } from '../src/common/errors.ts';
import { API_PATHS } from '../src/http/openapi.ts';
import { CLIENT_TYPES_FILE, clientTypes, EVERY_ROUTE } from '../src/testing/api-document.ts';
import { startTestService, type TestService } from '../src/testing/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');

/** Type-checks one file against the generated types with the project's own compiler and settings. */
function typeCheck(dir: string, name: string, source: string): { ok: boolean; output: string } {
  writeFileSync(join(dir, name), source);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2024',
        lib: ['es2024', 'dom'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
        typeRoots: [join(ROOT, 'node_modules/@types')],
        baseUrl: ROOT,
        paths: { 'openapi-fetch': [join(ROOT, 'node_modules/openapi-fetch')] },
      },
      files: [name, 'api.d.ts'],
    }),
  );
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
  return { ok: result.status === 0, output: result.stdout + result.stderr };
}

describe('the OpenAPI document', () => {
  let service: TestService;
  let document: Record<string, unknown>;
  let dir: string;
  before(async () => {
    service = await startTestService('sqlite', EVERY_ROUTE);
    document = (await service.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    dir = mkdtempSync(join(tmpdir(), 'till-openapi-'));
  });
  after(async () => {
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('validates as OpenAPI 3.1, with every $ref resolving to a named component', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.equal(validator.version, '3.1');
    assert.doesNotThrow(() => validator.resolveRefs());
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
    assert.ok(refs.length > 10);
    const schemas = (document.components as { schemas: Record<string, unknown> }).schemas;
    for (const ref of new Set(refs)) {
      const target = ref.slice('"$ref":"'.length, -1);
      assert.match(target, /^#\/components\/schemas\//);
      assert.ok(schemas[target.slice('#/components/schemas/'.length)], `${target} resolves`);
    }
    for (const name of [
      'NewPaymentSession',
      'UpdatePaymentSession',
      'PaymentSessionResponse',
      'PaymentSessionDetails',
      'Error',
      'X402Challenge',
      'X402Paid',
      'OrderReceipt',
    ])
      assert.ok(schemas[name], name);
  });

  test('passes a strict validator (@readme/openapi-parser): every {parameter} of a path declared, required, once', async () => {
    const result = await validateStrictly(structuredClone(document) as Parameters<typeof validateStrictly>[0]);
    assert.equal(result.valid, true, result.valid ? '' : JSON.stringify(result.errors, null, 2));
    assert.deepEqual(result.warnings, []);
    assert.equal(result.specification, 'OpenAPI');
  });

  test('describes the JSON API only: no page, no form post', () => {
    const paths = Object.keys(document.paths as Record<string, unknown>);
    for (const path of paths)
      assert.ok(
        API_PATHS.some((api) => api.test(path)),
        `${path} is not API`,
      );
    for (const page of ['/checkout/pay', '/sign-in', '/sign-out', '/account', '/oauth/authorize', '/oauth/consent/{id}', '/dashboard', '/mcp'])
      assert.ok(!paths.includes(page), `${page} is listed`);
    assert.ok(!paths.some((path) => path.startsWith('/dashboard')), 'no dashboard route is listed');
    for (const api of [
      '/api/checkout/v2/payment_session',
      '/api/checkout/v2/payment_session/{sessionId}',
      '/x402/session/{sessionId}',
      '/checkout/v2/x402/session/{sessionId}',
      '/checkout/v2/orders/receipt/{publicOrderId}',
      '/api/checkout/v2/webhooks/deliveries',
      '/api/checkout/v2/webhooks/events/{eventId}/redeliver',
      '/oauth/token',
      '/.well-known/oauth-authorization-server',
    ])
      assert.ok(paths.includes(api), `${api} is missing`);
  });

  /** Every operation of the document, the API's and the webhooks', with where it is. */
  const operations = () =>
    (['paths', 'webhooks'] as const).flatMap((section) =>
      Object.entries(document[section] as Record<string, Record<string, Record<string, unknown>>>).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => ({ where: `${method.toUpperCase()} ${path}`, operation })),
      ),
    );

  test('names every operation (operationId, camelCase, unique), so generated clients have a method per operation', () => {
    const unnamed = operations().filter(({ operation }) => typeof operation.operationId !== 'string');
    assert.deepEqual(
      unnamed.map(({ where }) => where),
      [],
      'give each of these routes an operationId in its RouteDoc',
    );
    const ids = operations().map(({ operation }) => operation.operationId as string);
    for (const id of ids) assert.match(id, /^[a-z][A-Za-z0-9]+$/);
    assert.equal(new Set(ids).size, ids.length, `operationIds repeat: ${ids}`);
    assert.ok(ids.includes('createPaymentSession') && ids.includes('receiveEvent'));
  });

  test('declares the API key and client-credentials bearer tokens; merchant operations take either, public ones say security: []', () => {
    const { securitySchemes } = document.components as { securitySchemes: Record<string, Record<string, string>> };
    assert.deepEqual(securitySchemes.apiKey, { ...securitySchemes.apiKey, type: 'apiKey', in: 'header', name: 'X-SC-ApiKey' });
    assert.deepEqual(securitySchemes.clientCredentials, { ...securitySchemes.clientCredentials, type: 'http', scheme: 'bearer' });
    const securityOf = (path: string, method: string) => (document.paths as Record<string, Record<string, { security: unknown }>>)[path]![method]!.security;
    // Each names the scope a restricted key (or a token asked with scope) needs.
    assert.deepEqual(securityOf('/api/checkout/v2/payment_session', 'post'), [{ apiKey: ['sessions:write'] }, { clientCredentials: ['sessions:write'] }]);
    for (const [path, method] of [
      ['/x402/session/{sessionId}', 'get'],
      ['/checkout/v2/orders/receipt/{publicOrderId}', 'get'],
      ['/oauth/token', 'post'],
      ['/.well-known/jwks.json', 'get'],
    ] as const)
      assert.deepEqual(securityOf(path, method), [], `${method} ${path} is public`);
    for (const { where, operation } of operations()) assert.ok(Array.isArray(operation.security), `${where} says who may call it`);
  });

  test("passes Redocly's recommended ruleset without an error or a warning (examples checked against their schemas)", async () => {
    const problems = await lintFromString({
      source: JSON.stringify(document),
      absoluteRef: 'openapi.json',
      config: await createConfig({ extends: ['recommended'] }),
    });
    assert.deepEqual(
      problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`),
      [],
    );
    const create = (document.paths as Record<string, Record<string, { requestBody: { content: Record<string, { example?: unknown }> } }>>)[
      '/api/checkout/v2/payment_session'
    ]!.post!;
    assert.ok(create.requestBody.content['application/json']!.example, 'E1 shows an example body');
  });

  test(`the client's committed types (${CLIENT_TYPES_FILE}) are what the document generates now, and the package type-checks`, async () => {
    assert.equal(
      readFileSync(join(ROOT, CLIENT_TYPES_FILE), 'utf8'),
      await clientTypes(document),
      'the API changed: run `npm run generate:client` and commit packages/client/src/openapi.ts',
    );
    const compiled = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'packages/client'), '--noEmit'], {
      encoding: 'utf8',
    });
    assert.equal(compiled.status, 0, compiled.stdout + compiled.stderr);
  });

  test('lists every code of the error catalogue, as the enum of Error.error.code and with its status', () => {
    const codes = Object.keys(ERROR_CATALOGUE);
    const schemas = (document.components as { schemas: Record<string, { properties: Record<string, { properties: Record<string, { enum?: string[] }> }> }> })
      .schemas;
    assert.deepEqual(schemas.Error!.properties.error!.properties.code!.enum, codes);
    assert.deepEqual(
      document['x-error-codes'],
      Object.entries(ERROR_CATALOGUE).map(([code, { status, meaning }]) => ({ code, status, meaning })),
    );
  });

  test('generates a typed client whose E1 call type-checks, and a wrong call does not', async () => {
    const types = astToString(await openapiTS(structuredClone(document) as unknown as Parameters<typeof openapiTS>[0]));
    writeFileSync(join(dir, 'api.d.ts'), types);
    const right = typeCheck(
      dir,
      'right.ts',
      `import createClient from 'openapi-fetch';
import type { paths } from './api.d.ts';
const client = createClient<paths>({ baseUrl: 'http://localhost:8080' });
export async function create(): Promise<string> {
  const { data, error } = await client.POST('/api/checkout/v2/payment_session', {
    headers: { 'X-SC-ApiKey': 'sk_test_…' },
    body: { amount: 12.5, currency: 'USD', orderId: 'order-1001', orderType: 'TRANSIENT' },
  });
  if (error) return error.error.code;
  return data.sessionId + data.redirectUrl;
}
`,
    );
    assert.equal(right.ok, true, right.output);
    const wrong = typeCheck(
      dir,
      'wrong.ts',
      `import createClient from 'openapi-fetch';
import type { paths } from './api.d.ts';
const client = createClient<paths>({ baseUrl: 'http://localhost:8080' });
export async function create() {
  await client.POST('/api/checkout/v2/payment_session', { body: { amount: '12.50', currency: 'USD', orderType: 'ONCE' } });
}
`,
    );
    assert.equal(wrong.ok, false, 'a wrong body must not type-check');
    assert.match(wrong.output, /Type 'string' is not assignable to type 'number'/);
    assert.match(wrong.output, /Type '"ONCE"' is not assignable/);
  });
});
