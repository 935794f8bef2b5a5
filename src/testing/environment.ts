// What a Till service under test needs around it: a database and a data folder of its own, a free
// port, and the settings that point it at a sandbox chain. Shared by the tests and the benches.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import pg from 'pg';
import { type Address, createPublicClient, http } from 'viem';
import { sandboxUsdcAbi } from '../sandbox/contracts/artifacts.ts';
import { fundViaHttp, sandboxControlsViaHttp } from '../sandbox/index.ts';

export type Engine = 'sqlite' | 'postgres';

/**
 * A database of its own for one test file: a fresh SQLite file, or a fresh PostgreSQL database on
 * the server at `postgresUrl` (TILL_TEST_POSTGRES_URL unless given).
 */
export async function createTestDatabase(engine: Engine, postgresUrl = process.env.TILL_TEST_POSTGRES_URL): Promise<{ url: string; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'till-test-'));
    return { url: `sqlite:${join(dir, 'till.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error('TILL_TEST_POSTGRES_URL is not set');
  const name = `till_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A fresh database, data folder and secret key, as the settings a service starts from; `drop` removes them. */
export async function createServiceStorage(engine: Engine, options: { postgresUrl?: string; prefix?: string } = {}) {
  const database = await createTestDatabase(engine, options.postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), options.prefix ?? 'till-data-'));
  return {
    settings: { TILL_DATABASE_URL: database.url, TILL_DATA_DIR: dataDir, TILL_SECRET_KEY: randomBytes(32).toString('hex') },
    async drop() {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Makes new temporary directories named from `prefix`, removed once the file's tests are done. Call it at a file's top level. */
export function temporaryDirectories(prefix: string): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

type SandboxUrls = { url: string; rpcUrl: string; facilitatorUrl: string; usdcAddress: string };

/** The settings that make a service pay through `sandbox` (started in this process or spawned). */
export function sandboxSettings(sandbox: SandboxUrls): Record<string, string> {
  return {
    TILL_SANDBOX: 'true',
    TILL_FACILITATOR_URL: sandbox.facilitatorUrl,
    TILL_BASE_RPC_URL: sandbox.rpcUrl,
    TILL_USDC_ADDRESS: sandbox.usdcAddress,
    TILL_SANDBOX_URL: sandbox.url,
  };
}

/** Funding, balances and facilitator statistics of a sandbox in another process, over HTTP. */
export function sandboxOverHttp(sandbox: SandboxUrls) {
  const client = createPublicClient({ transport: http(sandbox.rpcUrl) });
  const usdcAddress = sandbox.usdcAddress as Address;
  return {
    usdcAddress,
    fund: (address: string, usdc: string) => fundViaHttp(sandbox.url, address, usdc),
    balanceOf: (address: Address) =>
      client.readContract({ address: usdcAddress, abi: sandboxUsdcAbi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>,
    faults: sandboxControlsViaHttp(sandbox.url).faults,
  };
}
