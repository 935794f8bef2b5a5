import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestService, type TestService } from '../testing/harness.ts';

let service: TestService;
before(async () => {
  service = await startTestService('sqlite', { TILL_AUTH_URL: 'https://auth.till.example', TILL_MCP_URL: 'https://mcp.till.example/' });
});
after(() => service?.stop());

const get = (url: string) => service.app.inject({ method: 'GET', url });

test('protected resource metadata (RFC 9728) at both paths, as spec E6 shows it', async () => {
  for (const url of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    const answer = await get(url);
    assert.equal(answer.statusCode, 200);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.deepEqual(answer.json(), {
      resource: 'https://mcp.till.example/mcp',
      authorization_servers: ['https://auth.till.example'],
      scopes_supported: ['settings:read', 'orders:read'],
      bearer_methods_supported: ['header'],
      resource_documentation: 'http://till.test/docs',
    });
  }
});

test('authorization server metadata (RFC 8414): S256 only, Client ID Metadata Documents, no registration endpoint', async () => {
  const answer = await get('/.well-known/oauth-authorization-server');
  assert.equal(answer.statusCode, 200);
  const body = answer.json();
  assert.equal(body.issuer, 'https://auth.till.example');
  assert.equal(body.token_endpoint, 'https://auth.till.example/oauth/token');
  assert.equal(body.jwks_uri, 'https://auth.till.example/.well-known/jwks.json');
  assert.deepEqual(body.code_challenge_methods_supported, ['S256']);
  assert.equal(body.client_id_metadata_document_supported, true);
  assert.equal('registration_endpoint' in body, false);
  assert.deepEqual(body.response_types_supported, ['code']);
  assert.deepEqual(body.scopes_supported, ['settings:read', 'orders:read', 'sessions:write', 'keys:read', 'keys:write', 'refunds:read', 'refunds:write']);
});

test('the JWKS the metadata points at is served, public keys only', async () => {
  const answer = await get('/.well-known/jwks.json');
  assert.equal(answer.statusCode, 200);
  const { keys } = answer.json();
  assert.equal(keys.length, 1);
  assert.equal(keys[0].alg, 'ES256');
  assert.equal(keys[0].use, 'sig');
  assert.equal(keys[0].d, undefined);
});
