// The curl examples of docs/auth.md, run as written against a service, with the placeholders
// (client id and secret, the token, the port) replaced by real ones.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { createUser } from '../src/accounts/users.ts';
import { createClient } from '../src/oauth/clients.ts';
import { issueGrantSecret } from '../src/oauth/grant-secrets.ts';
import { activeGrant, addConsent } from '../src/oauth/grants.ts';
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

const AGENT = 'https://agent.example/oauth/client.json';

/** A coding agent's grant and refresh token, as the consent screen and code exchange would leave them. */
async function agentRefreshToken(merchantId: string): Promise<{ grantId: string; refreshToken: string }> {
  const { db } = service.context;
  const user = await createUser(db, { merchantId, email: 'docs@shop.example', password: 'correct horse battery staple' });
  return db.transaction().execute(async (trx) => {
    const grant = await addConsent(
      trx,
      { merchantId, userId: user.id, clientId: AGENT, clientName: 'Agent', scopes: ['settings:read', 'orders:read'], mode: 'sandbox' },
      Date.now(),
    );
    return { grantId: grant.id, refreshToken: await issueGrantSecret(trx, 'refresh_token', { grantId: grant.id, clientId: AGENT }, Date.now()) };
  });
}

test('docs/auth.md has curl examples for client credentials, discovery, refresh and revocation, and each runs', async () => {
  assert.ok(curlBlocks.length >= 4, 'curl blocks found');
  const { merchantId } = await service.merchant();
  const client = await createClient(service.context.db, merchantId, 'sandbox');
  const agent = await agentRefreshToken(merchantId);
  const token = (
    await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret, grant_type: 'client_credentials' }),
    }).then((r) => r.json())
  ).access_token;
  const outputs: string[] = [];
  for (const block of curlBlocks) {
    const script = block
      .replaceAll('http://localhost:8080', base)
      .replaceAll('cli_…', client.clientId)
      .replaceAll('cs_…', client.clientSecret)
      .replaceAll('rt_…', agent.refreshToken);
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
  const tokens = parsed.filter((body) => body.token_type === 'Bearer' && body.expires_in === 86400);
  assert.equal(tokens.length, 2, 'the JSON and the Basic token requests both answer a day-long token');
  const refreshed = parsed.find((body) => body.token_type === 'Bearer' && body.expires_in === 900);
  assert.match(refreshed?.refresh_token ?? '', /^rt_/, 'the refresh answered a new refresh token');
  assert.equal(refreshed.scope, 'settings:read orders:read');
  assert.ok(parsed.includes(200), 'the revocation answered 200');
  assert.equal(await activeGrant(service.context.db, agent.grantId), undefined, 'the revocation ended the grant');
  assert.ok(
    parsed.some((body) => typeof body.sessionId === 'string'),
    'E1 with the bearer token made a session',
  );
  assert.ok(parsed.some((body) => body.resource === `${base}/mcp`));
  assert.ok(parsed.some((body) => body.client_id_metadata_document_supported === true));
});
