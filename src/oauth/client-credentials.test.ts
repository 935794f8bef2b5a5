import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { openSecret, signingKeyBinding } from '../common/secrets.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createClient, revokeClient } from './clients.ts';
import { rotateSigningKey, signingKeys } from './signing-keys.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`client credentials on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    let merchantId: string;
    let client: { clientId: string; clientSecret: string };
    const audience = 'http://till.test/checkout';
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
      ({ merchantId } = await service.merchant());
      client = await createClient(service.context.db, merchantId, 'sandbox');
    });
    after(() => service?.stop());

    const token = (payload: string, headers: Record<string, string> = {}) =>
      service.app.inject({ method: 'POST', url: '/oauth/token', payload, headers: { 'content-type': 'application/json', ...headers } });
    const json = (body: Record<string, string>) => JSON.stringify(body);
    const grant = () => ({ client_id: client.clientId, client_secret: client.clientSecret, audience, grant_type: 'client_credentials' });
    const accessToken = async () => (await token(json(grant()))).json().access_token as string;
    const e1 = (authorization: string) =>
      service.app.inject({
        method: 'POST',
        url: '/api/checkout/v2/payment_session',
        headers: { authorization, 'content-type': 'application/json' },
        payload: { amount: 5, currency: 'USD' },
      });

    test('the client secret is stored as a hash only', async () => {
      const row = await service.context.db.selectFrom('oauth_clients').selectAll().where('id', '=', client.clientId).executeTakeFirstOrThrow();
      assert.match(client.clientSecret, /^cs_[\w-]{43}$/);
      assert.match(row.secret_hash, /^[0-9a-f]{64}$/);
      assert.ok(!JSON.stringify(row).includes(client.clientSecret));
    });

    test('a JSON body, a form body and HTTP Basic each get a day-long bearer token, not cached', async () => {
      const answers = [
        await token(json(grant())),
        await token(new URLSearchParams(grant()).toString(), { 'content-type': 'application/x-www-form-urlencoded' }),
        await token(new URLSearchParams({ grant_type: 'client_credentials', audience }).toString(), {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
        }),
      ];
      for (const answer of answers) {
        assert.equal(answer.statusCode, 200, answer.body);
        assert.equal(answer.headers['cache-control'], 'no-store');
        const body = answer.json();
        assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type']);
        assert.equal(body.token_type, 'Bearer');
        assert.equal(body.expires_in, 86400);
      }
    });

    test('the token is an ES256 at+jwt for the checkout audience, verifiable with the published JWKS', async () => {
      const jwt = await accessToken();
      const header = decodeProtectedHeader(jwt);
      assert.equal(header.alg, 'ES256');
      assert.equal(header.typ, 'at+jwt');
      const jwks = await service.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
      assert.equal(jwks.statusCode, 200);
      const keys = jwks.json().keys;
      assert.ok(keys.every((key: Record<string, string>) => key.kty === 'EC' && key.crv === 'P-256' && key.d === undefined));
      const { payload } = await jwtVerify(jwt, createLocalJWKSet({ keys }), { audience, issuer: 'http://till.test', currentDate: new Date(clock) });
      assert.equal(payload.sub, client.clientId);
      assert.equal(payload.merchant_id, merchantId);
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 86400);
    });

    test('the signing key is kept sealed under TILL_SECRET_KEY', async () => {
      const rows = await service.context.db.selectFrom('signing_keys').selectAll().execute();
      assert.ok(rows.length >= 1);
      for (const row of rows) {
        assert.ok(!row.private_jwk_sealed.includes('"d"'));
        assert.equal(JSON.parse(openSecret(row.private_jwk_sealed, service.config.secretKey, signingKeyBinding(row.kid))).kty, 'EC');
        assert.throws(() => openSecret(row.private_jwk_sealed, service.config.secretKey, signingKeyBinding('another-kid')), 'bound to its own row');
      }
    });

    test('refusals: wrong secret or unknown client 401 invalid_client; another audience invalid_target; other grants and malformed bodies 400', async () => {
      const cases: [string, Record<string, string>, number, string][] = [
        [json({ ...grant(), client_secret: `cs_${'A'.repeat(43)}` }), {}, 401, 'invalid_client'],
        [json({ ...grant(), client_id: `cli_${'A'.repeat(22)}` }), {}, 401, 'invalid_client'],
        [json({ ...grant(), client_secret: 'short' }), {}, 401, 'invalid_client'],
        [json({ grant_type: 'client_credentials', audience }), {}, 401, 'invalid_client'],
        [json({ ...grant(), audience: 'http://till.test/mcp' }), {}, 400, 'invalid_target'],
        [json({ ...grant(), audience: 'https://elsewhere.example/checkout' }), {}, 400, 'invalid_target'],
        [json({ ...grant(), resource: 'http://till.test/mcp' }), {}, 400, 'invalid_target'],
        [json({ ...grant(), grant_type: 'password' }), {}, 400, 'unsupported_grant_type'],
        [json({ client_id: client.clientId }), {}, 400, 'invalid_request'],
        ['{"grant_type":', {}, 400, 'invalid_request'],
        ['[1,2]', {}, 400, 'invalid_request'],
        ['grant_type=client_credentials&grant_type=x', { 'content-type': 'application/x-www-form-urlencoded' }, 400, 'invalid_request'],
        ['grant_type=client_credentials', { 'content-type': 'text/plain' }, 400, 'invalid_request'],
        [json(grant()), { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` }, 400, 'invalid_request'],
        [json({ grant_type: 'client_credentials' }), { authorization: 'Basic !!!' }, 401, 'invalid_client'],
      ];
      for (const [payload, headers, status, error] of cases) {
        const answer = await token(payload, headers);
        assert.equal(answer.statusCode, status, `${payload} → ${answer.body}`);
        assert.equal(answer.json().error, error, payload);
        assert.equal(typeof answer.json().error_description, 'string');
      }
      const wrong = await token(json({ ...grant(), client_secret: `cs_${'A'.repeat(43)}` }));
      assert.match(String(wrong.headers['www-authenticate']), /^Basic /);
    });

    test('E1, E2 and the session read take the bearer token in place of an API key', async () => {
      const authorization = `Bearer ${await accessToken()}`;
      const created = await e1(authorization);
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().sessionId;
      const read = await service.app.inject({ method: 'GET', url: `/api/checkout/v2/payment_session/${id}`, headers: { authorization } });
      assert.equal(read.statusCode, 200, read.body);
      const updated = await service.app.inject({
        method: 'PUT',
        url: '/api/checkout/v2/payment_session',
        headers: { authorization, 'content-type': 'application/json' },
        payload: { sessionId: id, amount: 7, currency: 'USD' },
      });
      assert.equal(updated.statusCode, 200, updated.body);
    });

    test('a token for another audience, a forged, garbled or expired one, and one whose client was revoked get 401', async () => {
      const { signing } = await signingKeys(service.context.db, service.config.secretKey, clock);
      const signed = (aud: string) =>
        new SignJWT({ client_id: client.clientId, merchant_id: merchantId })
          .setProtectedHeader({ alg: 'ES256', kid: signing.kid, typ: 'at+jwt' })
          .setIssuer('http://till.test')
          .setSubject(client.clientId)
          .setAudience(aud)
          .setIssuedAt(Math.floor(clock / 1000))
          .setExpirationTime(Math.floor(clock / 1000) + 600)
          .sign(signing.key);
      assert.equal((await e1(`Bearer ${await signed(audience)}`)).statusCode, 201, 'the control case works');
      const mcpToken = await signed('http://till.test/mcp');
      const answer = await e1(`Bearer ${mcpToken}`);
      assert.equal(answer.statusCode, 401);
      assert.equal(answer.json().error.code, 'unauthorized');
      assert.match(answer.json().error.message, /bearer token is not valid/);
      assert.equal(answer.headers['www-authenticate'], 'Bearer error="invalid_token"');
      const good = await accessToken();
      const [head, body] = good.split('.');
      for (const bad of ['garbage', `${head}.${body}.AAAA`, `${good}x`, 'a'.repeat(10_000), ''])
        assert.equal((await e1(`Bearer ${bad}`)).statusCode, 401, bad.slice(0, 20));

      const saved = clock;
      clock += 86_400_000 + 1000;
      assert.equal((await e1(`Bearer ${good}`)).statusCode, 401, 'expired');
      clock = saved;
      assert.equal((await e1(`Bearer ${good}`)).statusCode, 201);

      const other = await createClient(service.context.db, merchantId, 'sandbox');
      const otherToken = (await token(json({ ...grant(), client_id: other.clientId, client_secret: other.clientSecret }))).json().access_token;
      assert.equal((await e1(`Bearer ${otherToken}`)).statusCode, 201);
      assert.ok(await revokeClient(service.context.db, other.clientId));
      assert.equal((await e1(`Bearer ${otherToken}`)).statusCode, 401, 'revoked client');
      assert.equal((await token(json({ ...grant(), client_id: other.clientId, client_secret: other.clientSecret }))).statusCode, 401);
    });

    test('after a key rotation new tokens use the new key, and tokens of the old one still work until they expire', async () => {
      const before = await accessToken();
      const oldKid = decodeProtectedHeader(before).kid;
      const newKid = await rotateSigningKey(service.context.db, service.config.secretKey, 86_400_000, clock);
      assert.notEqual(newKid, oldKid);
      const afterToken = await accessToken();
      assert.equal(decodeProtectedHeader(afterToken).kid, newKid);
      const kids = (await service.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys.map((key: { kid: string }) => key.kid);
      assert.ok(kids.includes(oldKid) && kids.includes(newKid));
      assert.equal((await e1(`Bearer ${before}`)).statusCode, 201);
      assert.equal((await e1(`Bearer ${afterToken}`)).statusCode, 201);
    });
  });
}
