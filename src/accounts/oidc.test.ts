// Sign-in through an upstream OpenID Connect provider that the test runs itself (oidc-provider with
// its development login pages, where any login is accepted and becomes the account's email).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, test } from 'node:test';
import Provider from 'oidc-provider';
import { freePort } from '../testing/environment.ts';
import { startTestService, type TestService } from '../testing/harness.ts';
import { createUser } from './users.ts';

let provider: Server;
let service: TestService;
let till: string;
let verified = true;

before(async () => {
  const [providerPort, tillPort] = [await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${providerPort}`;
  till = `http://127.0.0.1:${tillPort}`;
  const oidc = new Provider(issuer, {
    clients: [
      {
        client_id: 'till',
        client_secret: 'till-upstream-secret',
        redirect_uris: [`${till}/sign-in/oidc/callback`],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    claims: { email: ['email', 'email_verified'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      return { accountId: id, claims: async () => ({ sub: id, email: id, email_verified: verified }) };
    },
  });
  provider = createServer(oidc.callback());
  await new Promise<void>((resolve) => provider.listen(providerPort, '127.0.0.1', resolve));
  service = await startTestService('sqlite', {
    TILL_BASE_URL: till,
    TILL_OIDC_ISSUER: issuer,
    TILL_OIDC_CLIENT_ID: 'till',
    TILL_OIDC_CLIENT_SECRET: 'till-upstream-secret',
  });
  await service.app.listen({ port: tillPort, host: '127.0.0.1' });
});
after(async () => {
  await service?.stop();
  provider?.closeAllConnections();
  await new Promise((resolve) => provider?.close(resolve));
});

/**
 * A person's browser over plain HTTP: follows redirects, keeps cookies (one jar, as a browser
 * shares cookies between ports of one host), and submits the provider's login and consent forms.
 * Returns the last answer, which is on Till.
 */
async function signInUpstream(login: string): Promise<{ status: number; location: string | null; body: string; cookies: Map<string, string> }> {
  const jar = new Map<string, string>();
  let url = new URL(`${till}/sign-in/oidc?return_to=%2Faccount`);
  let init: RequestInit = {};
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as object), cookie: [...jar].map(([n, v]) => `${n}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const index = pair.indexOf('=');
      const [name, value] = [pair.slice(0, index), pair.slice(index + 1)];
      if (/max-age=0|expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    const body = await response.text();
    const location = response.headers.get('location');
    if (url.origin === till && url.pathname === '/sign-in/oidc/callback') return { status: response.status, location, body, cookies: jar };
    if (location) {
      url = new URL(location, url);
      init = {};
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(body)?.[1];
    assert.ok(action, `a form to submit at ${url}: ${response.status} ${body.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const [, name, value] of body.matchAll(/<input[^>]*type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields.set(name!, value!);
    if (body.includes('name="login"')) fields.set('login', login);
    if (body.includes('name="password"')) fields.set('password', 'anything');
    url = new URL(action, url);
    init = { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  }
  throw new Error('the sign-in did not come back to Till');
}

test('a verified email from the upstream provider signs its user in, end to end', async () => {
  const { merchantId } = await service.merchant();
  await createUser(service.context.db, { merchantId, email: 'upstream@shop.example', password: 'a password never used here' });
  const page = await service.app.inject({ method: 'GET', url: '/sign-in' });
  assert.match(page.body, /href="\/sign-in\/oidc\?return_to=%2Fdashboard"/);

  const answer = await signInUpstream('Upstream@Shop.example');
  assert.equal(answer.status, 303, answer.body);
  assert.equal(answer.location, '/account');
  const account = await fetch(`${till}/account`, { headers: { cookie: `till_session=${answer.cookies.get('till_session')}` }, redirect: 'manual' });
  assert.equal(account.status, 200);
  assert.match(await account.text(), /signed in as <strong>upstream@shop\.example<\/strong>/);
});

test('an email without a user, an unverified email, or a callback not started here signs nobody in', async () => {
  const unknown = await signInUpstream('stranger@shop.example');
  assert.equal(unknown.status, 403);
  assert.match(unknown.body, /No Till user has the email stranger@shop\.example/);
  assert.equal(unknown.cookies.has('till_session'), false);

  const { merchantId } = await service.merchant();
  await createUser(service.context.db, { merchantId, email: 'unverified@shop.example', password: 'a password never used here' });
  verified = false;
  try {
    const answer = await signInUpstream('unverified@shop.example');
    assert.equal(answer.status, 403);
    assert.match(answer.body, /verified email/);
  } finally {
    verified = true;
  }

  const forged = await fetch(`${till}/sign-in/oidc/callback?code=x&state=y`, { redirect: 'manual' });
  assert.equal(forged.status, 401);
});

test('the three TILL_OIDC_ settings go together', async () => {
  const { loadConfig, ConfigError } = await import('../config.ts');
  assert.throws(
    () => loadConfig({ TILL_OIDC_ISSUER: 'https://idp.example' }),
    (error: unknown) => error instanceof ConfigError && error.setting === 'TILL_OIDC_CLIENT_ID',
  );
  assert.throws(
    () => loadConfig({ TILL_OIDC_CLIENT_ID: 'x', TILL_OIDC_CLIENT_SECRET: 'y' }),
    (error: unknown) => error instanceof ConfigError && error.setting === 'TILL_OIDC_ISSUER',
  );
  assert.equal(loadConfig({}).oidc, undefined);
});
