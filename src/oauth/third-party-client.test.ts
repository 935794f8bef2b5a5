// A strict third-party OAuth client (oauth4webapi) against the real service over HTTP: discovery
// from the MCP resource, authorization code + PKCE with a Client ID Metadata Document served here,
// sign-in and consent driven as a browser would (forms and cookies), token exchange, two
// refreshes, and the replay of the first refresh token revoking the whole grant.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { createUser } from '../accounts/users.ts';
import { type DocumentServer, startDocumentServer } from '../testing/document-server.ts';
import { freePort } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { merchantAtConsent, serveAgentDocument } from '../testing/oauth-flow.ts';
import { mcpAccess } from './mcp-access.ts';

const PASSWORD = 'correct horse battery staple';
const insecure = { [oauth.allowInsecureRequests]: true };

for (const { engine, skip } of engines) {
  describeOnEngine(`a strict third-party OAuth client on ${engine}`, skip, () => {
    let service: TestService;
    let documents: DocumentServer;
    let site: { clientId: string; redirectUri: string };
    let base: string;
    let email: string;
    before(async () => {
      documents = await startDocumentServer();
      site = serveAgentDocument(documents, 'strict-agent', 'Strict Agent');
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      service = await startTestService(engine, { TILL_BASE_URL: base, TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' });
      await service.app.listen({ port, host: '127.0.0.1' });
      const { merchantId } = await service.merchant();
      email = `owner-${engine}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
    });
    after(async () => {
      await service?.stop();
      await documents?.close();
    });

    test('discovery, code + PKCE, two refreshes; replaying the first refresh token revokes the grant', async () => {
      // Discovery as an MCP client does it: the resource's metadata names the authorization server.
      const resource = new URL(`${base}/mcp`);
      const resourceMetadata = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, insecure));
      assert.deepEqual(resourceMetadata.scopes_supported, ['settings:read', 'orders:read']);
      const issuer = new URL(resourceMetadata.authorization_servers![0]!);
      const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
      assert.equal(as.client_id_metadata_document_supported, true);
      assert.equal(as.registration_endpoint, undefined);
      assert.deepEqual(as.code_challenge_methods_supported, ['S256']);

      const client: oauth.Client = { client_id: site.clientId, token_endpoint_auth_method: 'none' };
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const authorizationUrl = new URL(as.authorization_endpoint!);
      for (const [name, value] of Object.entries({
        client_id: site.clientId,
        redirect_uri: site.redirectUri,
        response_type: 'code',
        scope: 'settings:read orders:read',
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        resource: resource.href,
      }))
        authorizationUrl.searchParams.set(name, value);

      // The merchant's browser: authorize → consent (signed out: sign-in first) → back to the client.
      const { consentPage, callback, signedIn } = await merchantAtConsent(base, email, PASSWORD)(authorizationUrl, ['settings:read', 'orders:read']);
      assert.ok(signedIn, 'signed out, the merchant signs in first');
      assert.match(consentPage, /Strict Agent/);
      assert.equal(`${callback.origin}${callback.pathname}`, site.redirectUri);

      // The client, strictly: state and iss checked, code exchanged with the verifier.
      const parameters = oauth.validateAuthResponse(as, client, callback, state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), parameters, site.redirectUri, codeVerifier, {
          ...insecure,
          additionalParameters: { resource: resource.href },
        }),
      );
      assert.equal(tokens.token_type, 'bearer');
      assert.equal(tokens.scope, 'settings:read orders:read');
      assert.ok(tokens.refresh_token && (tokens.expires_in ?? 0) > 0);
      assert.ok(await mcpAccess(service.context, tokens.access_token));

      const refresh = async (refreshToken: string) =>
        oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, insecure));
      const first = await refresh(tokens.refresh_token!);
      const second = await refresh(first.refresh_token!);
      assert.notEqual(first.refresh_token, tokens.refresh_token);
      assert.notEqual(second.refresh_token, first.refresh_token);
      assert.equal((await mcpAccess(service.context, second.access_token))?.grant.clientName, 'Strict Agent');

      // The first refresh token again: a replay. The grant is revoked, so even the newest tokens stop.
      await assert.rejects(refresh(tokens.refresh_token!), (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant');
      assert.equal(await mcpAccess(service.context, second.access_token), undefined);
      await assert.rejects(refresh(second.refresh_token!), (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant');
    });
  });
}
