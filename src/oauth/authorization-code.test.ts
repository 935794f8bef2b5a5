// OAuth 2.1 for coding agents, end to end over HTTP: authorization request, sign-in, consent,
// code + PKCE, access and refresh tokens, revocation; and the attacks each step must refuse.
// Sign-in brute force reaching the lockout (429) is covered in src/web/sign-in/sign-in.test.ts.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createUser } from '../accounts/users.ts';
import { type DocumentServer, startDocumentServer } from '../testing/document-server.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { Browser, csrfField } from '../testing/page-browser.ts';
import { listGrants, revokeGrant } from './grants.ts';
import { mcpAccess } from './mcp-access.ts';

const PASSWORD = 'correct horse battery staple';
const MCP = 'http://till.test/mcp';
const NORMAL = ['settings:read', 'orders:read'];

/** A coding agent as the authorization server knows it: its document's URL and its callback. */
type Agent = { clientId: string; redirectUri: string };
type Tokens = { access_token: string; refresh_token: string; scope: string; token_type: string; expires_in: number };

const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** Where a 303 back to the client goes, and its query parameters. */
function redirectBack(response: LightMyRequestResponse): { target: string; params: Record<string, string> } {
  assert.equal(response.statusCode, 303, response.body);
  const url = new URL(String(response.headers.location));
  return { target: `${url.origin}${url.pathname}`, params: Object.fromEntries(url.searchParams) };
}

/** An HTML page refusing the request, told to the person and never sent back to the client. */
function refusedOnPage(response: LightMyRequestResponse, status: number, problem: RegExp): void {
  assert.equal(response.statusCode, status, response.body);
  assert.equal(response.headers.location, undefined);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.match(response.body, problem);
}

for (const { engine, skip } of engines) {
  describeOnEngine(`authorization code for coding agents on ${engine}`, skip, () => {
    let service: TestService;
    let documents: DocumentServer;
    let merchantId: string;
    let merchant: Browser;
    let clock = Date.now();
    let agents = 0;
    let users = 0;

    /** A signed-in user of the merchant. */
    const signedInUser = async () => {
      const email = `owner${++users}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      const browser = new Browser(service);
      assert.equal((await browser.signIn(email, PASSWORD)).statusCode, 303);
      return browser;
    };

    before(async () => {
      documents = await startDocumentServer();
      service = await startTestService(engine, { TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' }, { now: () => clock });
      ({ merchantId } = await service.merchant());
      merchant = await signedInUser();
    });
    after(async () => {
      await service?.stop();
      await documents?.close();
    });

    /** A new agent (so a new grant), its document served as `document` makes it from its own URL. */
    const newAgent = (document: (url: string) => Record<string, unknown> = () => ({})): Agent => {
      const n = ++agents;
      const redirectUri = `http://127.0.0.1:${documents.port}/callback/${n}`;
      const clientId = documents.serveDocument(`/agent-${n}.json`, (url) => ({
        client_id: url,
        client_name: `Agent ${n}`,
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        ...document(url),
      }));
      return { clientId, redirectUri };
    };

    /** GET /oauth/authorize as the agent sends it, with a fresh PKCE verifier; `params` override or (undefined) remove. */
    async function authorize(agent: Agent, params: Record<string, string | undefined> = {}, browser = merchant) {
      const verifier = randomBytes(32).toString('base64url');
      const query = {
        response_type: 'code',
        client_id: agent.clientId,
        redirect_uri: agent.redirectUri,
        code_challenge: challengeOf(verifier),
        code_challenge_method: 'S256',
        scope: NORMAL.join(' '),
        state: 'state-1',
        resource: MCP,
        ...params,
      };
      const search = new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined));
      return { response: await browser.request('GET', `/oauth/authorize?${search}`), verifier };
    }

    /** Follows an authorization to its consent screen: its URL, the page and the page's CSRF token. */
    async function openConsent(authorized: LightMyRequestResponse, browser = merchant) {
      assert.equal(authorized.statusCode, 303, authorized.body);
      const url = String(authorized.headers.location);
      assert.match(url, /^\/oauth\/consent\/[\w-]{32}$/);
      const page = await browser.request('GET', url);
      return { url, page, csrf: csrfField(page.body) };
    }

    /** Posts the consent form: the decision and one `scope` field per ticked box. */
    const answerConsent = (consent: { url: string; csrf: string }, scopes: string[], decision = 'allow', browser = merchant) =>
      browser.request('POST', consent.url, [['csrf', consent.csrf], ['decision', decision], ...scopes.map((scope): [string, string] => ['scope', scope])]);

    /** Authorization and consent allowing the normal scopes: the code sent back, with the verifier to exchange it. */
    async function codeFor(agent: Agent) {
      const { response, verifier } = await authorize(agent);
      const { params: back } = redirectBack(await answerConsent(await openConsent(response), NORMAL));
      assert.ok(back.code, JSON.stringify(back));
      return { code: back.code, verifier };
    }

    const tokenEndpoint = (url: string, fields: Record<string, string>) =>
      service.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
      });
    const exchange = (agent: Agent, code: string, verifier: string, overrides: Record<string, string> = {}) =>
      tokenEndpoint('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        redirect_uri: agent.redirectUri,
        code_verifier: verifier,
        client_id: agent.clientId,
        ...overrides,
      });
    const refresh = (agent: Agent, refreshToken: string, extra: Record<string, string> = {}) =>
      tokenEndpoint('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: agent.clientId, ...extra });
    const revoke = (agent: Agent, token: string) => tokenEndpoint('/oauth/revoke', { token, client_id: agent.clientId });

    /** A token answer's body, checked to be one. */
    const tokensOf = (response: LightMyRequestResponse): Tokens => {
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    /** The whole flow for a new agent (or `agent`): tokens for the normal scopes. */
    const connect = async (agent = newAgent()) => {
      const { code, verifier } = await codeFor(agent);
      return { agent, tokens: tokensOf(await exchange(agent, code, verifier)) };
    };
    const oauthError = (response: LightMyRequestResponse, error: string) => {
      assert.equal(response.statusCode, error === 'invalid_client' ? 401 : 400, response.body);
      assert.equal(response.json().error, error);
    };
    /** The grant behind a token no longer gives access, and its refresh token is refused. */
    const ended = async (agent: Agent, tokens: Tokens) => {
      assert.equal(await mcpAccess(service.context, tokens.access_token), undefined);
      oauthError(await refresh(agent, tokens.refresh_token), 'invalid_grant');
    };

    test('a signed-out merchant is sent to sign in, and back to the consent screen', async () => {
      const { response } = await authorize(newAgent(), {}, new Browser(service));
      const consentUrl = String(response.headers.location);
      const stranger = new Browser(service);
      const signIn = await stranger.request('GET', consentUrl);
      assert.equal(signIn.statusCode, 303);
      assert.equal(signIn.headers.location, `/sign-in?return_to=${encodeURIComponent(consentUrl)}`);
      await createUser(service.context.db, { merchantId, email: 'returning@shop.example', password: PASSWORD });
      const signedIn = await stranger.signIn('returning@shop.example', PASSWORD, { return_to: consentUrl });
      assert.equal(signedIn.headers.location, consentUrl);
      assert.equal((await stranger.request('GET', consentUrl)).statusCode, 200);
    });

    test('the consent screen names the client and its redirect host, lists every scope, and pre-ticks only requested normal ones', async () => {
      const agent = newAgent();
      const { page } = await openConsent((await authorize(agent, { scope: 'settings:read keys:write' })).response);
      assert.equal(page.statusCode, 200);
      assert.equal(page.headers['cache-control'], 'no-store');
      // The form's answer is redirected to the client: browsers hold that redirect to form-action.
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, new RegExp(`form-action 'self' http://127\\.0\\.0\\.1:${documents.port};`));
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(page.body, new RegExp(`Allow <span class="client">Agent ${agents}</span>`));
      assert.match(page.body, new RegExp(`Your answer is sent to <strong>127\\.0\\.0\\.1:${documents.port}</strong>`));
      const boxes = Object.fromEntries(
        [...page.body.matchAll(/<input type="checkbox" name="scope" value="([^"]+)"[^>]*?( checked)?>/g)].map((box) => [box[1], Boolean(box[2])]),
      );
      assert.deepEqual(boxes, {
        'settings:read': true,
        'orders:read': false,
        'sessions:write': false,
        'keys:read': false,
        'keys:write': false,
        'refunds:read': false,
        'refunds:write': false,
      });
    });

    test('allowing sends a code; with its verifier it becomes an ES256 at+jwt for the MCP endpoint and a refresh token', async () => {
      const agent = newAgent();
      const { response, verifier } = await authorize(agent, { scope: 'settings:read keys:write' });
      // The merchant ticks the elevated scope the agent asked for, and leaves orders:read unticked.
      const back = redirectBack(await answerConsent(await openConsent(response), ['settings:read', 'keys:write']));
      assert.equal(back.target, agent.redirectUri);
      assert.deepEqual(Object.keys(back.params).sort(), ['code', 'iss', 'state']);
      assert.equal(back.params.state, 'state-1');
      assert.equal(back.params.iss, 'http://till.test');

      const answer = await exchange(agent, back.params.code!, verifier);
      const tokens = tokensOf(answer);
      assert.equal(answer.headers['cache-control'], 'no-store');
      assert.equal(tokens.token_type, 'Bearer');
      assert.equal(tokens.expires_in, 900);
      assert.equal(tokens.scope, 'settings:read keys:write');
      assert.match(tokens.refresh_token, /^rt_[\w-]{43}$/);
      const header = decodeProtectedHeader(tokens.access_token);
      assert.deepEqual([header.alg, header.typ], ['ES256', 'at+jwt']);
      const jwks = createLocalJWKSet((await service.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
      const { payload } = await jwtVerify(tokens.access_token, jwks, { audience: MCP, issuer: 'http://till.test', currentDate: new Date(clock) });
      const access = await mcpAccess(service.context, tokens.access_token);
      assert.ok(access);
      assert.equal(payload.grant_id, access.grant.id);
      assert.equal(payload.client_id, agent.clientId);
      assert.equal(payload.merchant_id, merchantId);
      assert.equal(payload.scope, 'settings:read keys:write');
      assert.deepEqual(access.scopes, ['settings:read', 'keys:write']);
    });

    test('each refresh rotates the refresh token and gives a working access token; scope can narrow but not widen', async () => {
      const { agent, tokens: first } = await connect();
      const second = tokensOf(await refresh(agent, first.refresh_token));
      const third = tokensOf(await refresh(agent, second.refresh_token));
      assert.equal(new Set([first.refresh_token, second.refresh_token, third.refresh_token]).size, 3);
      assert.equal(new Set([first.access_token, second.access_token, third.access_token]).size, 3);
      for (const tokens of [second, third]) {
        assert.equal(tokens.scope, 'settings:read orders:read');
        assert.deepEqual((await mcpAccess(service.context, tokens.access_token))?.scopes, NORMAL);
      }
      // Asking for more than was granted is refused, and leaves the refresh token usable.
      oauthError(await refresh(agent, third.refresh_token, { scope: 'settings:read keys:write' }), 'invalid_scope');
      const narrowed = tokensOf(await refresh(agent, third.refresh_token, { scope: 'orders:read' }));
      assert.equal(narrowed.scope, 'orders:read');
      assert.deepEqual((await mcpAccess(service.context, narrowed.access_token))?.scopes, ['orders:read']);
    });

    test('consent adds to the existing grant; the grant list shows its name, scopes, creation and last use', async () => {
      const { agent } = await connect();
      const { response, verifier } = await authorize(agent, { scope: 'keys:read' });
      const consent = await openConsent(response);
      // Already granted: ticked and fixed; the requested elevated scope is not ticked for the merchant.
      assert.match(consent.page.body, /value="settings:read" id="scope-settings-read" checked disabled>/);
      assert.match(consent.page.body, /value="keys:read" id="scope-keys-read">/);
      const { params } = redirectBack(await answerConsent(consent, ['keys:read']));
      const tokens = tokensOf(await exchange(agent, params.code!, verifier));
      assert.equal(tokens.scope, 'settings:read orders:read keys:read');

      const listed = () => listGrants(service.context.db, merchantId).then((grants) => grants.filter((grant) => grant.clientId === agent.clientId));
      const [grant, ...others] = await listed();
      assert.deepEqual(others, []);
      assert.deepEqual(
        { name: grant!.clientName, scopes: grant!.scopes, createdAt: grant!.createdAt, lastUsedAt: grant!.lastUsedAt },
        { name: `Agent ${agents}`, scopes: ['settings:read', 'orders:read', 'keys:read'], createdAt: clock, lastUsedAt: null },
      );
      assert.ok(await mcpAccess(service.context, tokens.access_token));
      assert.equal((await listed())[0]!.lastUsedAt, clock);
    });

    test('an authorization request without PKCE S256, with an unknown scope or another resource is sent back refused', async () => {
      const agent = newAgent();
      const cases: [Record<string, string | undefined>, string][] = [
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge_method: undefined }, 'invalid_request'],
        [{ code_challenge: undefined }, 'invalid_request'],
        [{ code_challenge: 'too-short' }, 'invalid_request'],
        [{ scope: 'settings:read payouts:write' }, 'invalid_scope'],
        [{ resource: 'http://till.test/checkout' }, 'invalid_target'],
        [{ response_type: 'token' }, 'unsupported_response_type'],
      ];
      for (const [params, error] of cases) {
        const back = redirectBack((await authorize(agent, params)).response);
        assert.equal(back.target, agent.redirectUri);
        assert.equal(back.params.error, error, JSON.stringify(params));
        assert.equal(back.params.state, 'state-1');
        assert.equal(back.params.code, undefined);
      }
    });

    test('an unlisted redirect_uri, a document naming another client_id or an oversized document is refused on a page', async () => {
      const agent = newAgent();
      const impostor = newAgent(() => ({ client_id: agent.clientId }));
      const oversized = newAgent(() => ({ padding: 'x'.repeat(6000) }));
      const cases: [Agent, RegExp][] = [
        [{ ...agent, redirectUri: `${agent.redirectUri}/elsewhere` }, /is not one of those listed in the client’s metadata document/],
        [{ ...agent, redirectUri: 'https://evil.example/callback' }, /is not one of those listed/],
        [impostor, /is not the URL it was fetched from/],
        [oversized, /is larger than 5120 bytes/],
      ];
      for (const [client, problem] of cases) refusedOnPage((await authorize(client)).response, 400, problem);
    });

    test('a document with a control character (U+0000 …) in a string it keeps is refused on a page, never a 5xx', async () => {
      const cases: [Agent, RegExp][] = [
        [newAgent(() => ({ client_name: 'Evil\u0000Agent' })), /client_name has a control character \(U\+0000\)/],
        [newAgent(() => ({ client_name: 'Two\nlines' })), /client_name has a control character \(U\+000A\)/],
        [newAgent(() => ({ client_name: 'Bell\u0007\u007f' })), /client_name has a control character \(U\+0007\)/],
      ];
      const withNul = newAgent();
      const nulRedirect = `${withNul.redirectUri}\u0000`;
      cases.push([
        { clientId: documents.serveDocument('/nul-redirect.json', (url) => ({ client_id: url, redirect_uris: [nulRedirect] })), redirectUri: nulRedirect },
        /redirect_uris has a control character \(U\+0000\)/,
      ]);
      // The redirect_uri is left out (the document lists one): a query parameter with U+0000 is refused before any fetch.
      for (const [client, problem] of cases) refusedOnPage((await authorize(client, { redirect_uri: undefined })).response, 400, problem);
      // A state with a control character (RFC 6749 allows %x20-7E) is sent back refused, without it.
      const { params } = redirectBack((await authorize(newAgent(), { state: 'a\u0001b' })).response);
      assert.deepEqual([params.error, params.error_description, params.state], ['invalid_request', 'state has a control character (U+0001)', undefined]);
    });

    test('a client_id whose document fails is fetched once in 30 s, however often it is asked for', async () => {
      const failing = {
        clientId: documents.serve('/failing/client.json', (_request, response) => response.writeHead(500).end()),
        redirectUri: 'https://agent.example/cb',
      };
      for (let i = 0; i < 5; i++) refusedOnPage((await authorize(failing)).response, 400, /answered HTTP 500 instead of 200/);
      assert.equal(documents.requestsTo('/failing/client.json'), 1);
    });

    test('documents fetched for one address are limited per minute: 429 with Retry-After, without fetching; cached clients go on', async () => {
      let now = Date.UTC(2030, 0, 1, 12, 0, 10);
      const limited = await startTestService(
        engine,
        { TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true', TILL_OAUTH_CLIENT_FETCHES_PER_MINUTE_PER_IP: '3' },
        { now: () => now },
      );
      try {
        const browser = new Browser(limited);
        const ask = (agent: Agent) => authorize(agent, {}, browser).then((r) => r.response);
        const [first, second, third, fourth] = [newAgent(), newAgent(), newAgent(), newAgent()] as [Agent, Agent, Agent, Agent];
        const pathOf = (agent: Agent) => new URL(agent.clientId).pathname;
        for (const agent of [first, second, third]) assert.equal((await ask(agent)).statusCode, 303);
        const refused = await ask(fourth);
        refusedOnPage(refused, 429, /Too many coding agents’ documents were fetched for your address this minute\. Try again in 50 s\./);
        assert.equal(refused.headers['retry-after'], '50');
        assert.equal(documents.requestsTo(pathOf(fourth)), 0, 'the refused document was not fetched');
        assert.equal((await ask(first)).statusCode, 303, 'a client whose document is cached costs no fetch');
        now += 50_000;
        assert.equal((await ask(fourth)).statusCode, 303, 'the next minute it is fetched');
        assert.equal(documents.requestsTo(pathOf(fourth)), 1);
      } finally {
        await limited.stop();
      }
    });

    test('with the development flag off, documents on loopback or private addresses are refused on a page', async () => {
      const strict = await startTestService(engine);
      try {
        const cases: [string, RegExp][] = [
          [newAgent().clientId, /an http URL on this machine, accepted only for local development/],
          [`https://127.0.0.1:${documents.port}/agent.json`, /refused by the SSRF guard: 127\.0\.0\.1 is 127\.0\.0\.1, a loopback address/],
          ['https://10.0.0.1/agent.json', /10\.0\.0\.1 is 10\.0\.0\.1, a private/],
        ];
        for (const [clientId, problem] of cases) {
          const { response } = await authorize({ clientId, redirectUri: 'https://agent.example/callback' }, {}, new Browser(strict));
          refusedOnPage(response, 400, problem);
        }
      } finally {
        await strict.stop();
      }
    });

    test('the client’s name is shown as text, never as markup', async () => {
      const agent = newAgent(() => ({ client_name: '<img src=x onerror=alert(1)>' }));
      const { page } = await openConsent((await authorize(agent)).response);
      assert.ok(page.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
      assert.ok(!page.body.includes('<img'));
    });

    test('allowing with every box unticked shows the consent screen again, and nothing is granted', async () => {
      const agent = newAgent();
      const consent = await openConsent((await authorize(agent)).response);
      const again = await answerConsent(consent, []);
      assert.equal(again.statusCode, 400);
      assert.match(again.body, /Tick at least one thing it may do, or choose Deny\./);
      assert.match(String(again.headers['content-security-policy']), /form-action 'self' http:\/\/127\.0\.0\.1:/);
      assert.equal(redirectBack(await answerConsent(consent, ['orders:read'])).target, agent.redirectUri);
    });

    test('a code lives a minute, an access token fifteen; the refresh token outlives the access token', async () => {
      const agent = newAgent();
      const late = await codeFor(agent);
      clock += 61_000;
      oauthError(await exchange(agent, late.code, late.verifier), 'invalid_grant');
      const { tokens } = await connect(agent);
      clock += 900_000;
      assert.equal(await mcpAccess(service.context, tokens.access_token), undefined);
      assert.ok(await mcpAccess(service.context, tokensOf(await refresh(agent, tokens.refresh_token)).access_token));
    });

    test('a wrong or missing code verifier is refused', async () => {
      const agent = newAgent();
      const { code } = await codeFor(agent);
      oauthError(await exchange(agent, code, randomBytes(32).toString('base64url')), 'invalid_grant');
      const other = await codeFor(agent);
      oauthError(await exchange(agent, other.code, ''), 'invalid_request');
    });

    test('a code used twice is refused, and the tokens from its first use stop working', async () => {
      const agent = newAgent();
      const { code, verifier } = await codeFor(agent);
      const tokens = tokensOf(await exchange(agent, code, verifier));
      oauthError(await exchange(agent, code, verifier), 'invalid_grant');
      await ended(agent, tokens);
    });

    test('a code is only for the client and redirect URI it was sent to', async () => {
      const [agent, other] = [newAgent(), newAgent()];
      const stolen = await codeFor(agent);
      oauthError(await exchange(other, stolen.code, stolen.verifier, { redirect_uri: agent.redirectUri }), 'invalid_grant');
      const misdirected = await codeFor(agent);
      oauthError(await exchange(agent, misdirected.code, misdirected.verifier, { redirect_uri: other.redirectUri }), 'invalid_grant');
      const secret = await codeFor(agent);
      oauthError(await exchange(agent, secret.code, secret.verifier, { client_secret: 'x' }), 'invalid_client');
    });

    test('consent is refused without its CSRF token, and to a user other than the one it was opened for', async () => {
      const agent = newAgent();
      const { response, verifier } = await authorize(agent);
      const consent = await openConsent(response);
      for (const csrf of ['', 'forged']) refusedOnPage(await answerConsent({ ...consent, csrf }, NORMAL), 403, /This form has expired/);
      const colleague = await signedInUser();
      refusedOnPage(await colleague.request('GET', consent.url), 403, /opened by another user/);
      refusedOnPage(
        await answerConsent({ url: consent.url, csrf: await colleague.csrf('/account') }, NORMAL, 'allow', colleague),
        403,
        /opened by another user/,
      );
      // None of that answered the request: its user still can.
      const { params } = redirectBack(await answerConsent(consent, NORMAL));
      tokensOf(await exchange(agent, params.code!, verifier));
    });

    test('denying sends access_denied back, and the request cannot be answered again', async () => {
      const agent = newAgent();
      const consent = await openConsent((await authorize(agent)).response);
      const back = redirectBack(await answerConsent(consent, NORMAL, 'deny'));
      assert.equal(back.target, agent.redirectUri);
      assert.deepEqual([back.params.error, back.params.state, back.params.iss, back.params.code], ['access_denied', 'state-1', 'http://till.test', undefined]);
      refusedOnPage(await answerConsent(consent, NORMAL), 400, /expired or was already answered/);
      assert.equal((await listGrants(service.context.db, merchantId)).filter((grant) => grant.clientId === agent.clientId).length, 0);
    });

    test('an MCP access token is refused by the payment API', async () => {
      const { tokens } = await connect();
      const e1 = await service.app.inject({
        method: 'POST',
        url: '/api/checkout/v2/payment_session',
        headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
        payload: { amount: 5, currency: 'USD' },
      });
      assert.equal(e1.statusCode, 401, e1.body);
    });

    test('a grant revoked by the merchant stops its tokens at once', async () => {
      const { agent, tokens } = await connect();
      const access = await mcpAccess(service.context, tokens.access_token);
      assert.ok(await revokeGrant(service.context.db, access!.grant.id, 'merchant', clock, merchantId));
      await ended(agent, tokens);
    });

    test('a rotated refresh token presented again revokes the grant: the latest tokens stop too', async () => {
      const { agent, tokens: first } = await connect();
      const latest = tokensOf(await refresh(agent, first.refresh_token));
      oauthError(await refresh(agent, first.refresh_token), 'invalid_grant');
      await ended(agent, latest);
    });

    test('of concurrent refreshes with one token, exactly one succeeds, and the others count as replays', async () => {
      const { agent, tokens } = await connect();
      const answers = await Promise.all(Array.from({ length: 10 }, () => refresh(agent, tokens.refresh_token)));
      assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, ...Array(9).fill(400)], answers.map((answer) => answer.body).join('\n'));
      for (const answer of answers.filter((answer) => answer.statusCode !== 200)) assert.equal(answer.json().error, 'invalid_grant');
      // The others presented a used token: a replay, so the grant is revoked, the winner's tokens with it.
      await ended(agent, tokensOf(answers.find((answer) => answer.statusCode === 200)!));
    });

    test('RFC 7009: revoking a refresh token ends the grant; an unknown token or another client’s gets 200 and changes nothing', async () => {
      const { agent, tokens } = await connect();
      const other = newAgent();
      for (const [client, token] of [
        [agent, 'rt_unknown'],
        [other, tokens.refresh_token],
        [other, tokens.access_token],
      ] as const) {
        const answer = await revoke(client, token);
        assert.equal(answer.statusCode, 200, answer.body);
      }
      assert.ok(await mcpAccess(service.context, tokens.access_token), 'still working');
      assert.equal((await revoke(agent, tokens.refresh_token)).statusCode, 200);
      await ended(agent, tokens);
    });

    test('RFC 7009: revoking an access token ends its grant as well', async () => {
      const { agent, tokens } = await connect();
      assert.equal((await revoke(agent, tokens.access_token)).statusCode, 200);
      await ended(agent, tokens);
    });
  });
}
