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
  const first = await buildApp(context, [(app) => addRoute(app, doc('/api/first'), {}, async () => ({}))]);
  const second = await buildApp(context, [
    (app) => addRoute(app, doc('/api/second'), {}, async () => ({})),
    (app) => void app.register(async (scope) => addRoute(scope, doc('/api/second/scoped'), {}, async () => ({}))),
  ]);
  try {
    assert.deepEqual(await documentedPaths(first), ['/api/first']);
    assert.deepEqual(await documentedPaths(second), ['/api/second', '/api/second/scoped']);
    assert.equal((await first.inject({ method: 'GET', url: '/api/second' })).statusCode, 404);
  } finally {
    await first.close();
    await second.close();
  }
});

test('pages and form posts are routes with docs, but not in /openapi.json: it describes the JSON API only', async () => {
  const app = await buildApp(context, [
    (scope) => addRoute(scope, doc('/api/read'), {}, async () => ({})),
    (scope) => addRoute(scope, doc('/dashboard/things/{id}/revoke'), {}, async () => ({})),
    (scope) => addRoute(scope, doc('/checkout/pay'), {}, async () => ({})),
  ]);
  try {
    assert.deepEqual(await documentedPaths(app), ['/api/read']);
    assert.equal(app.routeDocs.length, 3);
  } finally {
    await app.close();
  }
});
