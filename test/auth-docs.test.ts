// The curl examples of docs/auth.md, run as written against a service, with the placeholders
// (client id and secret, the token, the port) replaced by real ones.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { createClient } from '../src/oauth/clients.ts';
import { freePort } from '../src/testing/environment.ts';
import { startTestService, type TestService } from '../src/testing/harness.ts';

const DOC = readFileSync(resolve(import.meta.dirname, '../docs/auth.md'), 'utf8');
const curlBlocks = [...DOC.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((block) => block.includes('curl '));

let service: TestService;
let base: string;
before(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = await startTestService('sqlite', { TILL_BASE_URL: base });
  await service.app.listen({ port, host: '127.0.0.1' });
});
after(() => service?.stop());

test('docs/auth.md has curl examples for client credentials and discovery, and each runs', async () => {
  assert.ok(curlBlocks.length >= 2, 'curl blocks found');
  const { merchantId } = await service.merchant();
  const client = await createClient(service.context.db, merchantId);
  const token = (
    await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret, grant_type: 'client_credentials' }),
    }).then((r) => r.json())
  ).access_token;
  const outputs: string[] = [];
  for (const block of curlBlocks) {
    const script = block.replaceAll('http://localhost:8080', base).replaceAll('cli_…', client.clientId).replaceAll('cs_…', client.clientSecret);
    // Each command on its own line, its output on one line of its own.
    const commands = script
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .filter((line) => line.startsWith('curl '));
    for (const command of commands) {
      const { stdout } = await promisify(execFile)('bash', ['-e', '-o', 'pipefail', '-c', command], { env: { ...process.env, TOKEN: token } });
      outputs.push(stdout);
    }
  }
  const parsed = outputs.map((output) => JSON.parse(output));
  const tokens = parsed.filter((body) => body.token_type === 'Bearer');
  assert.equal(tokens.length, 2, 'the JSON and the Basic token requests both answer a token');
  for (const body of tokens) assert.equal(body.expires_in, 86400);
  assert.ok(
    parsed.some((body) => typeof body.sessionId === 'string'),
    'E1 with the bearer token made a session',
  );
  assert.ok(parsed.some((body) => body.resource === `${base}/mcp`));
  assert.ok(parsed.some((body) => body.client_id_metadata_document_supported === true));
});
