import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import type { AppContext } from '../context.ts';
import { createMetrics } from '../metrics.ts';
import { buildApp } from './app.ts';
import { addRoute, type RouteDoc } from './routes.ts';

/** What buildApp and documented routes use; nothing here touches the database. */
const context = { config: loadConfig({ TILL_BASE_URL: 'http://till.test' }), metrics: createMetrics(), log: pino({ level: 'silent' }) } as AppContext;

const doc = (url: string): RouteDoc => ({ method: 'GET', url, tag: 'Test', summary: `Read ${url}`, responses: { 200: { description: 'OK' } } });

async function documentedPaths(app: FastifyInstance): Promise<string[]> {
  const response = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(response.statusCode, 200);
  return Object.keys(response.json().paths);
}

test('each app documents only its own routes, including those added inside its plugins', async () => {
  const first = await buildApp(context, [(app) => addRoute(app, doc('/first'), {}, async () => ({}))]);
  const second = await buildApp(context, [
    (app) => addRoute(app, doc('/second'), {}, async () => ({})),
    (app) => void app.register(async (scope) => addRoute(scope, doc('/second/scoped'), {}, async () => ({}))),
  ]);
  try {
    assert.deepEqual(await documentedPaths(first), ['/first']);
    assert.deepEqual(await documentedPaths(second), ['/second', '/second/scoped']);
    assert.equal((await first.inject({ method: 'GET', url: '/second' })).statusCode, 404);
  } finally {
    await first.close();
    await second.close();
  }
});
