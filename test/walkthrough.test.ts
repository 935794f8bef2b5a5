import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { once } from 'node:events';
import { createServer } from 'node:net';

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

const dataDir = mkdtempSync(join(tmpdir(), 'till-walkthrough-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

test('README walkthrough: the service starts on its defaults, prints a test key, and creates a session', async () => {
  const port = await freePort();
  const sandboxPort = await freePort();
  const child = spawn(process.execPath, ['src/cli/main.ts', 'serve'], {
    env: { ...process.env, PORT: String(port), TILL_DATA_DIR: dataDir, TILL_LOG_LEVEL: 'warn', TILL_DATABASE_URL: '', TILL_SANDBOX_PORT: String(sandboxPort), TILL_FACILITATOR_URL: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let output = '';
    child.stdout.setEncoding('utf8');
    const apiKey = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: string) => {
        output += chunk;
        const match = output.match(/TEST API key[^:]*: (sk_test_\S+)/);
        if (match && /Till is serving/.test(output)) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
    });
    const response = await fetch(`http://localhost:${port}/api/checkout/v2/payment_session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sc-apikey': apiKey },
      body: JSON.stringify({ amount: 25, currency: 'USD', orderId: 'order-1001' }),
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    assert.equal(new URL(body.redirectUrl).searchParams.get('uid'), body.sessionId);
    assert.equal((await fetch(`http://localhost:${port}/readyz`)).status, 200);
    // The sandbox came up with the service: the session can be paid over x402.
    const challenge = await fetch(`http://localhost:${port}/x402/session/${body.sessionId}`);
    assert.equal(challenge.status, 402);
    const offer = (await challenge.json()).accepts[0];
    assert.equal(offer.maxAmountRequired, '25000000');
    assert.equal(offer.network, 'base');
    const faucet = await fetch(`http://localhost:${port}/sandbox/faucet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: offer.payTo, usdc: '1' }) });
    assert.equal(faucet.status, 200);
    const openapi = await (await fetch(`http://localhost:${port}/openapi.json`)).json();
    assert.equal(openapi.info.version, '2.0');
    assert.ok(openapi.paths['/api/checkout/v2/payment_session'].post);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
});
