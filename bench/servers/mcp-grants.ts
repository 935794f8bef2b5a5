// Authorizes BENCH_AGENTS coding agents (one grant each, the scopes in BENCH_SCOPES, comma-separated,
// settings:read unless given) on BENCH_MERCHANT_ID
// in the database of Till's settings, and prints their MCP access tokens as a JSON array. The mcp
// bench spreads its calls over these grants so that none reaches the hourly limit of tool calls.
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Scope } from '../../src/oauth/scopes.ts';
import { authorizedAgents } from '../../src/testing/agent.ts';

const merchantId = process.env.BENCH_MERCHANT_ID;
const count = Number(process.env.BENCH_AGENTS);
const scopes = (process.env.BENCH_SCOPES ?? 'settings:read').split(',') as Scope[];
if (!merchantId || !(count > 0)) throw new Error('BENCH_MERCHANT_ID and BENCH_AGENTS are required');
const config = loadConfig();
const { db, close } = openDatabase(config);
try {
  const agents = await authorizedAgents({ db, config, now: Date.now }, merchantId, scopes, count);
  process.stdout.write(JSON.stringify(agents.map((agent) => agent.accessToken)));
} finally {
  await close();
}
