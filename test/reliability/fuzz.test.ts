// Bad input never reaches a 5xx: every route of the service, read from the app itself, is sent
// generated requests over real HTTP (bodies, headers, query strings, encodings, raw bytes), on each
// engine, against a service paying through the sandbox chain. Each answer must be below 500, the
// service must log no error and leave no unhandled rejection, and a refused request (4xx) must leave
// the database as it was.
//
// Documents the service fetches (coding agents' Client ID Metadata Documents) are generated too, and
// served to /oauth/authorize from a site on loopback, with the same checks.
//
//   TILL_FUZZ_RUNS   requests per engine (default 600)
//   TILL_FUZZ_DOCUMENT_RUNS   fetched documents per engine (default 200)
//   TILL_FUZZ_SEED   fast-check seed (random when absent; printed with any failure)
//   TILL_FUZZ_PATH   with the seed, replays one failing request (printed with any failure)
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { createUser } from '../../src/accounts/users.ts';
import { createClient } from '../../src/oauth/clients.ts';
import { SCOPES } from '../../src/oauth/scopes.ts';
import { authorizedAgent } from '../../src/testing/agent.ts';
import { startDocumentServer } from '../../src/testing/document-server.ts';
import {
  contentEncodings,
  contentTypes,
  describeRequest,
  type FuzzRequest,
  formBody,
  idempotencyKeys,
  installWriteLog,
  jsonBody,
  jsonText,
  jsonValue,
  mutatedDeep,
  nastyString,
  OWN_URL,
  pathValue,
  queryString,
  type Route,
  routesOf,
  sendRaw,
  servedDocument,
  shortNasty,
} from '../../src/testing/fuzz.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../src/testing/harness.ts';
import { Browser, csrfField } from '../../src/testing/page-browser.ts';
import { paymentSignatureHeader } from '../../src/testing/payer.ts';
import { ASSET_SOURCES, assetManifest } from '../../src/web/kit/assets.ts';
import { setWebhook } from '../../src/webhooks/endpoints.ts';
import { ATTEMPTS_PER_SESSION } from '../../src/x402/attempts.ts';

const RUNS = Number(process.env.TILL_FUZZ_RUNS ?? 600);
const DOCUMENT_RUNS = Number(process.env.TILL_FUZZ_DOCUMENT_RUNS ?? 200);
const PATH = process.env.TILL_FUZZ_PATH;
const SEED = process.env.TILL_FUZZ_SEED ? Number(process.env.TILL_FUZZ_SEED) : (Date.now() ^ (Math.random() * 2 ** 31)) | 0;

/**
 * Writes a refusal may make by design, each with its reason; any other write by a 4xx is a defect.
 * Times a read refreshes are not watched at all (the `ignored` columns of installWriteLog).
 */
const REFUSAL_WRITES: { route: RegExp; status: RegExp; table: string; why: string }[] = [
  {
    route: /^(GET|HEAD) \/(checkout\/v2\/)?x402\/session\//,
    status: /^402$/,
    table: 'payment_quotes',
    why: 'the 402 challenge is the offer, and its quote is stored',
  },
  {
    route: /^(GET|HEAD) \/(checkout\/v2\/)?x402\/session\//,
    status: /^4/,
    table: 'rate_limit_windows',
    why: 'proofs and new quotes count against their limits, refused ones included',
  },
  {
    route: /^(GET|HEAD) \/(checkout\/v2\/)?x402\/session\//,
    status: /^402$/,
    table: 'payment_attempts',
    why: 'a refused proof is recorded for the merchant to see: under its payer when the payer signed it (repeats counted on one row, at most ATTEMPTS_PER_SESSION rows a session, checked after the run), otherwise on the session’s one unsigned count; purged by age',
  },
  { route: /^POST \/sign-in$/, status: /^4/, table: 'sign_in_throttle', why: 'failed sign-ins are counted to slow guessing' },
  {
    route: /^POST \/dashboard\//,
    status: /^4/,
    table: 'sign_in_throttle',
    why: 'a form that re-checks the password (wallet, password change, keys, webhook secrets) counts each attempt before checking it',
  },
  {
    route: /^POST \/api\/checkout\/v2\/payment_session$/,
    status: /^4/,
    table: 'rate_limit_windows',
    why: 'a session creation counts against its key’s limit (TILL_SESSIONS_PER_MINUTE_PER_KEY) in the statement that checks it, whatever the answer',
  },
  {
    route: /^POST \/(api\/checkout\/v2\/webhooks\/test|dashboard\/notifications\/test)$/,
    status: /^4/,
    table: 'rate_limit_windows',
    why: 'a test event counts against the merchant’s hourly limit (TILL_WEBHOOK_TEST_EVENTS_PER_HOUR) before it is queued, refused ones included',
  },
  {
    route: /^(GET|HEAD) \/oauth\/authorize$/,
    status: /^4/,
    table: 'rate_limit_windows',
    why: 'fetches of client metadata documents count against the per-IP limit, refused ones included',
  },
  {
    route: /^POST \/sign-up$/,
    status: /^429$/,
    table: 'rate_limit_windows',
    why: 'sign-ups count against the per-address and per-IP limits before they are mailed, refused ones included',
  },
  { route: /^POST \/mcp$/, status: /^40[13]$/, table: 'mcp_tool_calls', why: 'a tool call refused for its grant (revoked, scope not granted) is audited' },
];
/** Columns a request refreshes while reading: the last use of a key or an agent's grant, a browser session's last activity. */
const READ_TIMES: Record<string, string[]> = {
  api_keys: ['last_used_at'],
  oauth_grants: ['last_used_at'],
  user_sessions: ['last_seen_at'],
};

const SIGNED_IN_PASSWORD = 'correct horse battery staple';

type Fixture = Awaited<ReturnType<typeof setUp>>;

/** A shop with every kind of session, a paid order with its receipt and webhook event, a signed-in user, an API client and an MCP agent. */
async function setUp(engine: 'sqlite' | 'postgres', log: pino.Logger) {
  const shop: PayingShop = await startPayingShop(
    engine,
    // Limits out of the way, so any 5xx is a defect and not a limiter's answer.
    {
      TILL_X402_PROOFS_PER_MINUTE_PER_IP: '100000000',
      TILL_X402_PROOFS_PER_MINUTE_PER_PAYER: '100000000',
      TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '100000000',
      TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT: '100000000',
      TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '100000000',
      TILL_OAUTH_CLIENT_FETCHES_PER_MINUTE_PER_IP: '100000000',
      TILL_SESSIONS_PER_MINUTE_PER_KEY: '100000000',
      TILL_WEBHOOK_TEST_EVENTS_PER_HOUR: '100000000',
      // Client metadata documents are fetched from the fuzz's own site on loopback.
      TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true',
      // Self-serve sign-up on, so its pages are fuzzed and not only their 404.
      TILL_SIGN_UP: 'true',
    },
    { log },
  );
  const { service } = shop;
  const db = service.context.db;
  await setWebhook(db, service.config.secretKey, shop.merchantId, { url: 'https://hooks.shop.example/till' }, service.config.mode);
  const sessions = {
    fixed: await shop.createSession({ amount: 0.25, currency: 'USD', orderId: 'fuzz-fixed' }),
    transient: await shop.createSession({ amount: 3, currency: 'EUR', orderType: 'TRANSIENT', concept: 'A mug' }),
    static: await shop.createSession({ amount: 0.1, currency: 'USD', orderType: 'STATIC' }),
    editable: await shop.createSession({ amount: 0.5, currency: 'USD', editable: true, minAmount: 0.2 }),
  };
  // A paid order, so receipts and a webhook event exist.
  const paid = await shop.readyToPay({ amount: 0.01, currency: 'USD', orderId: 'fuzz-paid' });
  const proof = await shop.signedPayment(paid.payer, paid.offer);
  assert.equal((await shop.pay(paid.sessionId, proof.header)).status, 200);
  const read = await fetch(`${shop.baseUrl}/api/checkout/v2/payment_session/${paid.sessionId}`, { headers: { 'x-sc-apikey': shop.apiKey } });
  const receiptUrl = ((await read.json()) as { payments: { receiptUrl: string }[] }).payments[0]?.receiptUrl ?? '';
  const publicOrderId = receiptUrl.split('/').at(-1) ?? '';
  const deliveries = await fetch(`${shop.baseUrl}/api/checkout/v2/webhooks/deliveries`, { headers: { 'x-sc-apikey': shop.apiKey } });
  const eventIds = ((await deliveries.json()) as { deliveries: { eventId: string }[] }).deliveries.map((d) => d.eventId);
  // Near-valid proofs to mutate: signed for the static session (which takes many payments) and the fixed one.
  const offers = [await shop.challenge(sessions.static), await shop.challenge(sessions.fixed)];
  const payer = await shop.fundedPayer('1');
  const proofs: unknown[] = [];
  for (const offer of offers) {
    const signed = await shop.signedPayment(payer, offer);
    proofs.push(JSON.parse(Buffer.from(signed.header, 'base64').toString()));
    const v2 = JSON.parse(Buffer.from(paymentSignatureHeader(signed.signature, signed.auth, shop.sandbox.usdcAddress), 'base64').toString());
    proofs.push(v2);
    // The same, naming its payment with x402's payment-identifier extension.
    proofs.push({ ...v2, extensions: { 'payment-identifier': { info: { required: false, id: `pay_fuzz_${offer.payTo.slice(2, 18)}` } } } });
  }
  // Another merchant, whose key must not reach this one's sessions.
  const other = await service.merchant({ walletAddress: `0x${'2'.repeat(40)}` });
  // A signed-in user of the shop, with the session cookie and the CSRF token of the dashboard's forms.
  const email = `fuzz-${engine}@shop.example`;
  await createUser(db, { merchantId: shop.merchantId, email, password: SIGNED_IN_PASSWORD });
  const browser = new Browser(service);
  assert.equal((await browser.signIn(email, SIGNED_IN_PASSWORD)).statusCode, 303);
  const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  const csrf = csrfField((await browser.request('GET', '/dashboard/settings')).body);
  assert.ok(csrf, 'the dashboard forms carry a CSRF token');
  // An API client with a bearer token, and a coding agent allowed every scope on the MCP endpoint.
  const client = await createClient(db, shop.merchantId, 'sandbox');
  const token = await fetch(`${shop.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }),
  });
  assert.equal(token.status, 200);
  const bearer = ((await token.json()) as { access_token: string }).access_token;
  const agent = await authorizedAgent(
    service.context,
    shop.merchantId,
    SCOPES.map((s) => s.scope),
  );
  // What the revoking routes may revoke for real, so the credentials above keep working.
  const revocable = {
    client: await createClient(db, shop.merchantId, 'sandbox'),
    agent: await authorizedAgent(service.context, shop.merchantId, ['settings:read']),
  };
  const site = await startDocumentServer();
  return {
    site,
    revocable,
    shop,
    sessions,
    paidSession: paid.sessionId,
    publicOrderId,
    eventIds,
    proofs,
    other,
    email,
    cookie,
    csrf,
    client,
    bearer,
    agent,
  };
}

/** What a route's requests are made of, beyond what every request gets (auth, cookies, types, encodings). */
type Spec = {
  params?: Record<string, string[]>;
  query?: Record<string, fc.Arbitrary<string>>;
  body?: { json: Record<string, unknown>[]; limit: number } | { form: Record<string, fc.Arbitrary<string>> } | { bytes: fc.Arbitrary<Buffer> };
  headers?: fc.Arbitrary<[string, string][]>;
  /** Routes that end the signed-in session: they get a wrong CSRF token only, so the session lives on for the other routes. */
  keepsSession?: boolean;
  /** The route's own headers carry its credentials (MCP's bearer token). */
  ownAuth?: boolean;
  /** Its share of the requests, against 1 for a route without one: the payment API and x402 get more. */
  weight?: number;
};

const oneOf = (...values: string[]) => fc.constantFrom(...values);
/** Mostly `good`, at times one of `others` or a nasty string. */
const mostly = (good: fc.Arbitrary<string>, others: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: others }, { weight: 1, arbitrary: nastyString });
const text = nastyString;

/** Every route's spec, by `METHOD /url` as the app lists it. */
function specs(f: Fixture): Record<string, Spec> {
  const s = f.sessions;
  const sessionIds = [s.fixed, s.transient, s.static, s.editable, f.paidSession];
  const amount = fc.oneof(oneOf('0.3', '0.5', '1', '0.2', '0.19', '100000000000', '1e2', '-1', '0', '0.0000001', '1,5', ' 1', 'NaN'), text);
  const proof = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...f.proofs).chain(mutatedDeep) },
    { weight: 1, arbitrary: jsonValue.map((v) => Buffer.from(jsonText(v) ?? 'null').toString('base64')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('base64')) },
    { weight: 1, arbitrary: fc.base64String({ maxLength: 200 }) },
    { weight: 1, arbitrary: text },
  );
  const x402: Spec = {
    weight: 8,
    params: { sessionId: sessionIds },
    query: { amount },
    headers: fc.oneof(
      fc.constant<[string, string][]>([]),
      proof.map((p) => [['x-payment', p]] as [string, string][]),
      proof.map((p) => [['payment-signature', p]] as [string, string][]),
      fc.tuple(proof, proof).map(
        ([a, b]) =>
          [
            ['x-payment', a],
            ['payment-signature', b],
          ] as [string, string][],
      ),
      fc.tuple(proof, proof).map(
        ([a, b]) =>
          [
            ['x-payment', a],
            ['x-payment', b],
          ] as [string, string][],
      ),
    ),
  };
  const manifest: Spec = {
    query: {
      limit: oneOf('1', '50', '100', '0', '101', 'x'),
      cursor: fc.oneof(
        text,
        fc.constantFrom(...sessionIds).map((id) => Buffer.from(id).toString('base64url')),
      ),
    },
    headers: fc.oneof(
      fc.constant<[string, string][]>([]),
      text.map((tag) => [['if-none-match', tag]] as [string, string][]),
    ),
  };
  const preflight: Spec = {
    params: { sessionId: sessionIds },
    headers: fc
      .tuple(fc.oneof(oneOf('GET', 'POST', 'DELETE'), text), fc.oneof(oneOf('x-payment, payment-signature', 'authorization'), text))
      .map(([method, headers]) => [
        ['access-control-request-method', method],
        ['access-control-request-headers', headers],
      ]),
  };
  const e1 = {
    amount: 1.5,
    currency: 'USD',
    orderType: 'TRANSIENT',
    orderId: 'o-1',
    concept: 'Tea',
    successUrl: 'https://shop.example/ok',
    editable: false,
    minAmount: null,
  };
  const form = (fields: Record<string, fc.Arbitrary<string>>): Spec => ({ body: { form: { csrf: fc.constant(f.csrf), ...fields } } });
  const page: Spec = { query: { page: oneOf('1', '2', '0', '999999'), archived: oneOf('1', '0'), done: oneOf('1', 'created') } };
  const rpcMethods = oneOf(
    'eth_chainId',
    'eth_blockNumber',
    'eth_getBalance',
    'eth_call',
    'eth_getTransactionReceipt',
    'eth_sendRawTransaction',
    'eth_getLogs',
    'eth_estimateGas',
    'net_version',
    'hardhat_reset',
    'evm_mine',
  );
  const rpcCall = fc.record({
    jsonrpc: fc.oneof(fc.constant('2.0'), jsonValue),
    id: jsonValue,
    method: fc.oneof(rpcMethods, text),
    params: fc.oneof(fc.array(jsonValue, { maxLength: 3 }), jsonValue),
  });
  const mcpCall = fc.record({
    jsonrpc: fc.oneof(fc.constant('2.0'), jsonValue),
    id: fc.oneof(fc.integer(), jsonValue),
    method: fc.oneof(oneOf('initialize', 'tools/list', 'tools/call', 'ping', 'notifications/initialized', 'resources/list'), text),
    params: fc.oneof(
      fc.record({
        name: fc.oneof(
          oneOf(
            'create_payment_session',
            'list_orders',
            'get_receipt',
            'get_payment_settings',
            'list_api_keys',
            'create_api_key',
            'list_payment_sessions',
            'list_refunds',
            'prepare_refund',
            'submit_refund',
          ),
          text,
        ),
        arguments: fc.oneof(
          fc.dictionary(
            oneOf('amount', 'currency', 'orderId', 'publicOrderId', 'limit', 'cursor', 'payTo', 'paymentId', 'status', 'nonce', 'signature', 'validBefore'),
            jsonValue,
          ),
          jsonValue,
        ),
      }),
      jsonValue,
    ),
  });
  const jsonRpc = (call: fc.Arbitrary<unknown>): Spec => ({
    body: {
      bytes: fc.oneof(
        { weight: 4, arbitrary: call.map((c) => Buffer.from(jsonText(c) ?? 'null')) },
        { weight: 1, arbitrary: fc.array(call, { maxLength: 5 }).map((c) => Buffer.from(jsonText(c))) },
        { weight: 1, arbitrary: jsonValue.map((v) => Buffer.from(jsonText(v) ?? 'null')) },
      ),
    },
  });
  const mcp: Spec = {
    ...jsonRpc(mcpCall),
    ownAuth: true,
    headers: fc
      .tuple(
        mostly(fc.constant(`Bearer ${f.agent.accessToken}`), oneOf(`Bearer ${f.bearer}`, 'Bearer x', '')),
        mostly(fc.constant('application/json, text/event-stream'), oneOf('application/json', 'text/event-stream', '*/*')),
        mostly(oneOf('2025-11-25', '2026-07-28'), oneOf('2025-06-18', '1999-01-01')),
        fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: text }),
      )
      .map(([authorization, accept, version, sessionId]) => [
        ['authorization', authorization],
        ['accept', accept],
        ['mcp-protocol-version', version],
        ...(sessionId ? [['mcp-session-id', sessionId] as [string, string]] : []),
      ]),
  };
  const authorizeQuery = {
    client_id: oneOf('https://agent.example/1/client.json', 'http://127.0.0.1:1/client.json', f.agent.clientId),
    redirect_uri: oneOf('https://agent.example/1/callback', 'http://127.0.0.1:1/cb'),
    response_type: oneOf('code', 'token'),
    code_challenge: oneOf('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', ''),
    code_challenge_method: oneOf('S256', 'plain'),
    scope: oneOf('settings:read orders:read', 'keys:write', 'nope'),
    state: text,
    resource: oneOf(f.shop.baseUrl, `${f.shop.baseUrl}/mcp`, 'https://elsewhere.example'),
  };
  const tokenFields = {
    grant_type: oneOf('client_credentials', 'authorization_code', 'refresh_token', 'password'),
    client_id: oneOf(f.client.clientId, f.agent.clientId, 'cli_nope'),
    client_secret: oneOf(f.client.clientSecret, 'cs_wrong'),
    code: text,
    code_verifier: text,
    redirect_uri: oneOf('https://agent.example/1/callback'),
    refresh_token: text,
    resource: oneOf(f.shop.baseUrl, `${f.shop.baseUrl}/mcp`),
    scope: oneOf('settings:read', 'keys:write orders:read'),
  };
  const redeliver: Spec = { params: { eventId: f.eventIds } };
  const wallet = oneOf(`0x${'3'.repeat(40)}`, f.shop.merchantWallet, '0x123', `0x${'Z'.repeat(40)}`);
  return {
    'GET /': {},
    'GET /healthz': {},
    'GET /readyz': {},
    'GET /metrics': {},
    // The built stylesheets and scripts: stable and hashed names, and ones that are not there.
    'GET /assets/:file': {
      params: { file: [...Object.keys(ASSET_SOURCES), ...Object.values(assetManifest()), 'nothing.css', '..%2Fmanifest.json', 'manifest.json'] },
    },
    // A merchant's brand files: by hash (none stored: 404) and by colour (passing, failing, malformed).
    'GET /brand/logo/:hash': { params: { hash: ['0'.repeat(64), 'ABC', '..%2F..%2Fetc%2Fpasswd'] } },
    'GET /brand/accent/:file': { params: { file: ['0f766e.css', 'ffff00.css', '0F766E.css', 'x.css'] } },
    'GET /favicon.svg': {},
    'GET /favicon.ico': {},
    'GET /openapi.json': {},
    'GET /docs': {},
    'POST /api/checkout/v2/payment_session': {
      weight: 5,
      body: { json: [e1, { amount: 2, currency: 'usd' }, { amount: 0.5, currency: 'JPY', editable: true, minAmount: 0.1 }], limit: 16 * 1024 },
    },
    'PUT /api/checkout/v2/payment_session': {
      weight: 5,
      body: { json: sessionIds.map((sessionId) => ({ sessionId, amount: 2.5, concept: 'Changed', currency: 'USD' })), limit: 16 * 1024 },
    },
    'GET /api/checkout/v2/payment_session/:sessionId': { weight: 3, params: { sessionId: sessionIds } },
    'GET /api/checkout/v2/payment_session': {
      weight: 2,
      query: {
        status: oneOf('OPEN', 'SUCCESS,EXPIRED', 'PAID', ''),
        orderId: oneOf('order-1', ''),
        createdFrom: oneOf('2020-01-01T00:00:00Z', 'yesterday'),
        createdTo: oneOf('2040-01-01T00:00:00Z', '2020-01-01T00:00:00Z'),
        limit: oneOf('1', '100', '101', '0', '-1', '1.5'),
        cursor: oneOf('AAAA', '%00', ''),
      },
    },
    // Refunds over the API: never a real signature, so nothing is ever recorded or moved.
    'POST /api/checkout/v2/payments/:paymentId/refunds/prepare': {
      params: { paymentId: [f.publicOrderId, 'TX-1', '%00'] },
      body: { json: [{ amount: '0.01' }, { amount: 'x' }, { amount: '-1' }, {}, { amount: '0.01', payTo: '0x1' }], limit: 16 * 1024 },
    },
    'POST /api/checkout/v2/refunds': {
      body: {
        json: [
          {
            paymentId: f.publicOrderId,
            amount: '0.01',
            validBefore: String(Math.floor(Date.now() / 1000) + 300),
            nonce: `0x${'ab'.repeat(32)}`,
            signature: `0x${'1b'.repeat(65)}`,
          },
          { paymentId: 'TX-1', amount: 'x', validBefore: '1', nonce: '0x12', signature: '0x' },
          {},
        ],
        limit: 16 * 1024,
      },
    },
    'GET /api/checkout/v2/refunds/:refundId': { params: { refundId: ['rf_AAAAAAAAAAAAAAAAAAAAAA', 'x', '%00'] } },
    'GET /api/checkout/v2/refunds': {
      query: {
        paymentId: oneOf(f.publicOrderId, 'TX-1', ''),
        paymentSessionId: oneOf(...sessionIds, ''),
        status: oneOf('PENDING', 'SUCCEEDED,FAILED', 'DONE', ''),
        limit: oneOf('1', '100', '101', '0', '-1', '1.5'),
        cursor: oneOf('AAAA', '%00', ''),
      },
    },
    'GET /api/checkout/v2/webhooks/deliveries': {
      query: { eventId: oneOf(...f.eventIds), limit: oneOf('1', '200', '201', '0', '-1', '1.5'), before: oneOf('2030-01-01T00:00:00Z', 'yesterday') },
    },
    'POST /api/checkout/v2/webhooks/events/:eventId/redeliver': redeliver,
    'POST /api/checkout/v2/webhooks/test': { body: { json: [{}, { type: 'payment.succeeded' }], limit: 16 * 1024 } },
    'GET /api/checkout/v2/events': {
      query: {
        type: oneOf('payment.succeeded', 'session.expired,refund.failed', 'payment.refunded', ''),
        createdFrom: oneOf('2020-01-01T00:00:00Z', 'yesterday'),
        createdTo: oneOf('2040-01-01T00:00:00Z', '2020-01-01T00:00:00Z'),
        order: oneOf('newest', 'oldest', 'random'),
        limit: oneOf('1', '100', '101', '0', '-1', '1.5'),
        cursor: oneOf('AAAA', '%00', ''),
      },
    },
    'GET /api/checkout/v2/events/:eventId': { params: { eventId: [...f.eventIds, 'evt_nope', '%00'] } },
    'POST /api/checkout/v2/events/test': { body: { json: [{}, { type: 'payment.succeeded' }, { type: 'refund.failed' }, { type: 'nope' }], limit: 16 * 1024 } },
    'GET /account': {},
    'GET /account/coding-agents': {},
    'POST /oauth/token': { weight: 2, body: { form: tokenFields } },
    'OPTIONS /oauth/token': preflight,
    'POST /oauth/revoke': {
      body: {
        form: {
          token: oneOf(f.revocable.agent.accessToken, 'not-a-token'),
          token_type_hint: oneOf('access_token', 'refresh_token'),
          client_id: oneOf(f.revocable.agent.clientId),
        },
      },
    },
    'OPTIONS /oauth/revoke': preflight,
    'GET /oauth/authorize': { query: authorizeQuery },
    'GET /oauth/consent/:id': { params: { id: [] } },
    'POST /oauth/consent/:id': { params: { id: [] }, ...form({ decision: oneOf('allow', 'deny'), scope: oneOf('settings:read', 'keys:write') }) },
    'GET /dashboard': {},
    'GET /dashboard/settings': {},
    'POST /dashboard/settings/business': form({
      name: text,
      support_email: oneOf('help@shop.example', 'nope'),
      website_url: oneOf('https://shop.example', 'ftp://x'),
    }),
    'POST /dashboard/settings/wallet': form({ wallet, confirm: oneOf('1', 'yes', ''), password: oneOf(SIGNED_IN_PASSWORD, 'wrong') }),
    'POST /dashboard/settings/chains': form({ chain: oneOf('base', 'eip155:8453', 'solana'), token: oneOf('USDC', 'usdc') }),
    // The logo form sent without a file (refused: no logo chosen), the removal, the accent colour.
    'POST /dashboard/settings/logo': form({ logo: oneOf('logo.png', '') }),
    'POST /dashboard/settings/logo/remove': form({}),
    'POST /dashboard/settings/accent': form({ accent_color: oneOf('#0f766e', '#ffff00', 'teal', '') }),
    'GET /dashboard/account': {},
    'POST /dashboard/account/password': { ...form({ current_password: oneOf('wrong'), new_password: text, new_password_again: text }), keepsSession: true },
    'POST /dashboard/account/sign-out-everywhere': { ...form({}), keepsSession: true },
    'GET /dashboard/account/two-factor': {},
    'POST /dashboard/account/two-factor/totp': form({}),
    'POST /dashboard/account/two-factor/totp/confirm': form({ code: oneOf('000000', '12345', 'abc', '') }),
    'POST /dashboard/account/two-factor/recovery-codes': form({ second_factor_code: oneOf('000000', '') }),
    'POST /dashboard/account/two-factor/totp/remove': form({ second_factor_code: oneOf('000000', '') }),
    // Never `yes` with a second factor: the shop's user has none, so requiring one of everyone is refused.
    'POST /dashboard/account/two-factor/passkeys/options': form({}),
    'POST /dashboard/account/two-factor/passkeys': form({ name: oneOf('Laptop', ''), response: oneOf('{"id":"x","type":"public-key"}', 'not json', '') }),
    'POST /dashboard/account/two-factor/passkeys/:id/remove': { params: { id: ['pk_unknown'] }, ...form({ second_factor_code: oneOf('000000') }) },
    'POST /dashboard/account/two-factor/require': form({ required: oneOf('yes', 'no', 'maybe'), second_factor_code: oneOf('000000') }),
    // Never a real key id: the shop's key must keep working for the other routes.
    'POST /dashboard/account/api-keys/:keyId/revoke': { params: { keyId: [] }, query: { since: oneOf('0', '1795600000000', 'x') }, ...form({}) },
    'GET /dashboard/get-paid': {},
    'POST /dashboard/get-paid/api-keys': form({
      mode: oneOf('test', 'live'),
      access: oneOf('full', 'restricted', 'none'),
      scopes: oneOf('sessions:write', 'events:read', 'nope'),
      password: oneOf(SIGNED_IN_PASSWORD, 'wrong'),
    }),
    'POST /dashboard/get-paid/api-keys/:id/revoke': { params: { id: [] }, ...form({ confirm: oneOf('1') }) },
    'POST /dashboard/get-paid/clients': form({ password: oneOf(SIGNED_IN_PASSWORD, 'wrong') }),
    'POST /dashboard/get-paid/clients/:id/revoke': { params: { id: [f.revocable.client.clientId] }, ...form({ confirm: oneOf('1') }) },
    'GET /dashboard/links': page,
    'POST /dashboard/links': form({
      amount: amount,
      currency: oneOf('USD', 'EUR', 'XXX'),
      concept: text,
      orderType: oneOf('STATIC', 'TRANSIENT'),
      editable: oneOf('on', '1'),
      minAmount: amount,
      discoverable: oneOf('on', '1'),
    }),
    'GET /dashboard/links/:sessionId': { params: { sessionId: sessionIds }, ...page },
    'POST /dashboard/links/:sessionId': {
      params: { sessionId: sessionIds },
      ...form({ amount: amount, concept: text, currency: oneOf('USD'), discoverable: oneOf('on') }),
    },
    'POST /dashboard/links/:sessionId/archive': { params: { sessionId: sessionIds }, ...form({ archived: oneOf('1', '0') }) },
    'GET /dashboard/orders': {
      query: {
        q: text,
        status: oneOf('SUCCESS', 'FAILED', 'x'),
        from: oneOf('2026-01-01', '2026-13-40'),
        to: oneOf('2030-01-01'),
        page: oneOf('1', '2'),
        after: text,
      },
    },
    'GET /dashboard/orders.csv': { query: { q: text, from: oneOf('2026-01-01'), to: oneOf('x') } },
    'POST /dashboard/orders/:paymentId/refund/prepare': {
      params: { paymentId: [f.publicOrderId] },
      ...form({ amount: oneOf('0.001', '0.02', '-1', 'x', '') }),
    },
    'POST /dashboard/orders/:paymentId/refund': {
      params: { paymentId: [f.publicOrderId] },
      ...form({
        amount: oneOf('0.001', '0.02', 'x'),
        validBefore: oneOf('1', '99999999999', String(Math.floor(Date.now() / 1000) + 300)),
        nonce: oneOf(`0x${'ab'.repeat(32)}`, '0x12', ''),
        signature: oneOf(`0x${'1b'.repeat(65)}`, '0x', 'x'),
        reason: text,
      }),
    },
    'GET /dashboard/developers': { query: { revoked: oneOf('1'), limits: oneOf('1') } },
    'POST /dashboard/developers/agents/:grantId/revoke': { params: { grantId: [f.revocable.agent.grantId] }, ...form({}) },
    'POST /dashboard/developers/agents/:grantId/refund-limits': {
      params: { grantId: [f.revocable.agent.grantId] },
      ...form({ perRefund: oneOf('0', '0.5', '-1', 'x', ''), perDay: oneOf('0', '10', '1.1234567', '') }),
    },
    'GET /dashboard/notifications': { query: { eventId: oneOf(...f.eventIds) } },
    'POST /dashboard/notifications/endpoint': form({
      url: oneOf('https://hooks.shop.example/till', 'http://10.0.0.1/x', 'not a url'),
      events: oneOf('payment.succeeded', 'nope'),
    }),
    'POST /dashboard/notifications/events/:eventId/redeliver': { ...redeliver, ...form({}) },
    'POST /dashboard/notifications/reveal': form({ password: oneOf(SIGNED_IN_PASSWORD, 'wrong') }),
    'POST /dashboard/notifications/rotate': form({ password: oneOf(SIGNED_IN_PASSWORD, 'wrong'), confirm: oneOf('1') }),
    'POST /dashboard/notifications/test': form({}),
    'GET /checkout/v2/orders/receipt/:publicOrderId': { weight: 3, params: { publicOrderId: [f.publicOrderId] }, query: { format: oneOf('json', 'html') } },
    'GET /checkout/v2/x402/session/:sessionId': x402,
    'OPTIONS /checkout/v2/x402/session/:sessionId': preflight,
    'GET /x402/session/:sessionId': x402,
    'OPTIONS /x402/session/:sessionId': preflight,
    'GET /.well-known/x402': manifest,
    'GET /.well-known/x402.json': manifest,
    'GET /checkout/pay': { query: { uid: fc.constantFrom(...sessionIds), amount } },
    'POST /sandbox/rpc': { ...jsonRpc(rpcCall), weight: 2 },
    'POST /sandbox/faucet': {
      weight: 2,
      body: {
        json: [
          { address: `0x${'4'.repeat(40)}`, usdc: '1' },
          { address: `0x${'5'.repeat(40)}`, usdc: 2 },
        ],
        limit: 1024 * 1024,
      },
    },
    'GET /sandbox/tx/:hash': { params: { hash: [`0x${'a'.repeat(64)}`] } },
    'GET /sign-in': { query: { return_to: oneOf('/dashboard', 'https://evil.example', '//evil.example') } },
    'POST /sign-in': {
      body: {
        form: { csrf: text, email: oneOf(f.email, 'nobody@shop.example'), password: oneOf('wrong', ''), return_to: oneOf('/dashboard', '//evil.example') },
      },
    },
    'GET /sign-in/oidc': { query: { return_to: oneOf('/dashboard') } },
    'GET /sign-in/second-factor': { query: { return_to: oneOf('/dashboard', '//evil.example') } },
    'POST /sign-in/second-factor': {
      body: { form: { csrf: text, code: oneOf('123456', 'abcde-fghij', '', '1234567890123456789'), return_to: oneOf('/dashboard') } },
    },
    'POST /sign-in/second-factor/passkey/options': { body: { form: { csrf: text, return_to: oneOf('/dashboard') } } },
    'POST /sign-in/second-factor/passkey': {
      body: { form: { csrf: text, response: oneOf('{"id":"x","type":"public-key"}', 'not json', ''), return_to: oneOf('/dashboard') } },
    },
    'GET /sign-in/forgot': {},
    'POST /sign-in/forgot': { body: { form: { csrf: text, email: oneOf(f.email, 'nobody@shop.example', 'not an address') } } },
    'GET /sign-in/reset': { query: { token: text } },
    'POST /sign-in/reset': { body: { form: { csrf: text, token: text, password: oneOf('a new password of some length', ''), confirm: text } } },
    'GET /mail/unsubscribe': { query: { user: text, topic: oneOf('payments', 'refunds', 'attention', 'webhooks', 'nope'), token: text } },
    'POST /mail/unsubscribe': {
      query: { user: text, topic: oneOf('payments', 'nope'), token: text },
      body: { form: { 'List-Unsubscribe': oneOf('One-Click') } },
    },
    'GET /mail/receipt': { query: { order: oneOf(f.publicOrderId, 'TX-NOPE') } },
    'POST /mail/receipt': { body: { form: { csrf: text, order: oneOf(f.publicOrderId, 'TX-NOPE'), email: oneOf('buyer@shop.example', 'not an address') } } },
    'POST /mail/receipt.json': {
      body: {
        json: [
          { order: f.publicOrderId, email: 'buyer@shop.example' },
          { order: 'TX-NOPE', email: 'not an address' },
        ],
        limit: 1024,
      },
    },
    'POST /dashboard/notifications/mail': form({ notices: oneOf('payments', 'refunds', 'nope'), summary: oneOf('none', 'daily', 'weekly', 'hourly') }),
    'GET /sandbox/mail': {},
    'GET /sandbox/mail/:id': { params: { id: ['mail_nope'] } },
    'GET /sandbox/mail/:id/html': { params: { id: ['mail_nope'] } },
    'POST /dashboard/mode': form({ mode: oneOf('test', 'live', 'nope'), section: oneOf('orders', 'nope') }),
    'GET /dashboard/team': { query: { invited: oneOf('1', 'x') } },
    'POST /dashboard/team/invitations': form({
      email: oneOf('new-member@shop.example', f.email, 'not an address', ''),
      role: oneOf('viewer', 'owner', 'superuser', ''),
    }),
    'POST /dashboard/team/invitations/:id/revoke': { params: { id: ['inv_nope'] }, ...form({}) },
    'POST /dashboard/team/members/:userId/role': { params: { userId: ['usr_nope'] }, ...form({ role: oneOf('viewer', 'owner', 'superuser') }) },
    'POST /dashboard/team/members/:userId/remove': { params: { userId: ['usr_nope'] }, ...form({}) },
    'GET /dashboard/activity': {
      query: { who: text, what: oneOf('role_changed', 'nope', ''), from: oneOf('2026-01-01', 'yesterday'), to: oneOf('2040-01-01', 'x') },
    },
    'GET /dashboard/activity.csv': {
      query: { who: oneOf('agent', 'operator', ''), what: oneOf('wallet_changed', 'nope'), from: oneOf('2026-01-01', '2026-13-45') },
    },
    'GET /invitations/accept': { query: { token: text } },
    'POST /invitations/accept': { body: { form: { csrf: text, token: text, password: oneOf('a new password of some length', ''), confirm: text } } },
    'GET /sign-up': {},
    'POST /sign-up': {
      body: {
        form: {
          csrf: text,
          name: oneOf('Fuzz Shop', '', 'x'.repeat(101)),
          email: oneOf(f.email, 'not an address'),
          password: oneOf('a new password of some length', 'short'),
          confirm: text,
        },
      },
    },
    'GET /sign-up/confirm': { query: { token: text } },
    'POST /sign-up/confirm': { body: { form: { csrf: text, token: text } } },
    'GET /sign-in/oidc/callback': { query: { code: text, state: text } },
    'POST /sign-out': { ...form({}), keepsSession: true },
    'GET /.well-known/jwks.json': {},
    'GET /.well-known/oauth-protected-resource': {},
    'GET /.well-known/oauth-protected-resource/mcp': {},
    'GET /.well-known/oauth-authorization-server': {},
    'POST /mcp': { ...mcp, weight: 4 },
    'GET /mcp': mcp,
    'PUT /mcp': mcp,
    'PATCH /mcp': mcp,
    'DELETE /mcp': mcp,
    'OPTIONS /mcp': preflight,
  };
}

/** The headers every request may carry: the merchant's credentials (right, wrong, another's, twice), cookies, origin, accept. */
function commonHeaders(f: Fixture, keepsSession: boolean): fc.Arbitrary<[string, string][]> {
  const h = (name: string) => (value: string) => [[name, value]] as [string, string][];
  const auth = fc.oneof(
    { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 4, arbitrary: fc.constant(h('x-sc-apikey')(f.shop.apiKey)) },
    { weight: 1, arbitrary: fc.constant(h('x-sc-apikey')(f.other.apiKey)) },
    { weight: 1, arbitrary: shortNasty.map(h('x-sc-apikey')) },
    { weight: 1, arbitrary: fc.constant([...h('x-sc-apikey')(f.shop.apiKey), ...h('x-sc-apikey')(f.other.apiKey)]) },
    { weight: 2, arbitrary: fc.constant(h('authorization')(`Bearer ${f.bearer}`)) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('Bearer', 'Bearer ', 'Basic Zm9vOmJhcg==', `Bearer ${f.agent.accessToken}`, `bearer ${f.bearer}x`, 'Bearer a.b.c')
        .map(h('authorization')),
    },
    { weight: 1, arbitrary: fc.constant([...h('authorization')(`Bearer ${f.bearer}`), ...h('x-sc-apikey')(f.other.apiKey)]) },
  );
  const cookie = fc.oneof(
    { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 3, arbitrary: fc.constant(h('cookie')(f.cookie)) },
    { weight: 1, arbitrary: shortNasty.map((v) => h('cookie')(`till_session=${v}; till_csrf=${v}`)) },
  );
  const origin = fc.oneof(
    { weight: 3, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 1, arbitrary: fc.constantFrom(f.shop.baseUrl, 'https://evil.example', 'null').map(h('origin')) },
  );
  const accept = fc.oneof(
    { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 1, arbitrary: fc.constantFrom('application/json', 'text/html', 'text/html;q=0.1, application/json', '*/*', 'image/png', '').map(h('accept')) },
    { weight: 1, arbitrary: shortNasty.map(h('accept')) },
  );
  const misc = fc.oneof(
    { weight: 6, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 1, arbitrary: shortNasty.map(h('x-request-id')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'range', 'if-none-match', 'expect')
        .chain((name) => shortNasty.map(h(name))),
    },
    { weight: 1, arbitrary: fc.constant(h('x-big')('a'.repeat(20_000))) },
  );
  return fc
    .tuple(
      auth,
      keepsSession ? fc.constant<[string, string][]>([]) : cookie,
      origin,
      accept,
      misc,
      contentEncodings.map((e) => e.flatMap(h('content-encoding'))),
    )
    .map((parts) => parts.flat());
}

/** The requests of one route. */
function requestsOf(route: Route, spec: Spec, f: Fixture): fc.Arbitrary<FuzzRequest> {
  const paramNames = [...route.url.matchAll(/:(\w+)/g)].map((m) => m[1] as string);
  const path = fc
    .tuple(...paramNames.map((name) => pathValue(spec.params?.[name] ?? [])))
    .map((values) => paramNames.reduce((url, name, i) => url.replace(`:${name}`, values[i] as string), route.url));
  const body: fc.Arbitrary<Buffer | undefined> = !spec.body
    ? fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: jsonBody([], 1024).map((b) => b as Buffer | undefined) })
    : 'json' in spec.body
      ? jsonBody(spec.body.json, spec.body.limit)
      : 'form' in spec.body
        ? formBody(spec.body.form)
        : spec.body.bytes;
  const type =
    spec.body && 'form' in spec.body
      ? fc.oneof({ weight: 4, arbitrary: fc.constant<string[]>(['application/x-www-form-urlencoded']) }, contentTypes)
      : contentTypes;
  const method =
    route.method === 'GET' ? fc.oneof({ weight: 9, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: fc.constant('HEAD') }) : fc.constant(route.method);
  const csrfBody = spec.keepsSession
    ? body.map((b) => b && Buffer.from(b.toString('latin1').replaceAll(encodeURIComponent(f.csrf.toWellFormed()), 'x'), 'latin1'))
    : body;
  const known = spec.query ?? {};
  const names = Object.keys(known);
  // Half the requests are clean but for the generated values: credentials of the shop, the right
  // content type, the route's own query keys. They get past the edge into the handlers' logic.
  const cleanQuery = names.length
    ? fc.oneof(
        fc.constant(''),
        fc
          .array(
            fc.constantFrom(...names).chain((name) => (known[name] as fc.Arbitrary<string>).map((v) => `${name}=${encodeURIComponent(v.toWellFormed())}`)),
            { minLength: 1, maxLength: 3 },
          )
          .map((parts) => `?${parts.join('&')}`),
      )
    : fc.constant('');
  const credentials = spec.ownAuth
    ? fc.constant<[string, string][]>([])
    : fc.constantFrom<[string, string][]>(
        [['x-sc-apikey', f.shop.apiKey]],
        [['authorization', `Bearer ${f.bearer}`]],
        spec.keepsSession ? [] : [['cookie', f.cookie]],
      );
  const cleanType = fc.constant<string[]>([spec.body && 'form' in spec.body ? 'application/x-www-form-urlencoded' : 'application/json']);
  const clean = fc.record({
    method,
    path,
    query: cleanQuery,
    headers: fc.tuple(credentials, spec.headers ?? fc.constant<[string, string][]>([])).map(([a, b]) => [...a, ...b]),
    body: csrfBody,
    type: cleanType,
    framing: fc.constant<'length' | 'chunked'>('length'),
    chunk: fc.constant(0),
  });
  const rough = fc.record({
    method,
    path,
    query: queryString(known),
    headers: fc
      .tuple(commonHeaders(f, spec.keepsSession ?? false), spec.headers ?? fc.constant<[string, string][]>([]), idempotencyKeys)
      .map(([common, own, keys]) => [...common, ...own, ...keys.map((k) => ['idempotency-key', k] as [string, string])]),
    body: csrfBody,
    type,
    framing: fc.constantFrom('length', 'length', 'length', 'chunked') as fc.Arbitrary<'length' | 'chunked'>,
    chunk: fc.integer({ min: 1, max: 64 }),
  });
  return fc.oneof(clean, rough).map(({ method, path, query, headers, body, type, framing, chunk }) => ({
    method,
    target: path + query,
    headers: body ? [...headers, ...type.map((t) => ['content-type', t] as [string, string])] : headers,
    body: body ?? Buffer.alloc(0),
    framing: body ? framing : 'none',
    chunk,
  }));
}

for (const { engine, skip } of engines) {
  describeOnEngine(`fuzzing every route (${engine})`, skip, () => {
    const errorLines: string[] = [];
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    const onException = (error: unknown) => rejections.push(error);
    // The service's log, kept from warnings up: an error line is a failure.
    const log = pino(
      { level: process.env.TILL_FUZZ_LOG_LEVEL ?? 'warn' },
      new Writable({
        write(chunk, _encoding, done) {
          const line = String(chunk);
          if (process.env.TILL_FUZZ_LOG_LEVEL) process.stderr.write(line);
          if ((JSON.parse(line) as { level: number }).level >= 50) errorLines.push(line);
          done();
        },
      }),
    );
    let f: Fixture;
    before(async () => {
      process.on('unhandledRejection', onRejection);
      process.on('uncaughtException', onException);
      f = await setUp(engine, log);
    });
    after(async () => {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
      await f?.shop.stop();
      await f?.site.close();
    });
    let writeLog: Awaited<ReturnType<typeof installWriteLog>> | undefined;
    /** The write log, installed once for the tests that use it. */
    const writes = async () => (writeLog ??= await installWriteLog(f.shop.service.context.db, engine, READ_TIMES));

    test('every route of the app has a generator', () => {
      const table = specs(f);
      const missing = routesOf(f.shop.service.app)
        .map((r) => `${r.method} ${r.url}`)
        .filter((key) => !table[key]);
      assert.deepEqual(missing, [], `routes without a generator: ${missing.join(', ')}`);
      assert.ok(Object.keys(table).length >= 60);
    });

    test(`${RUNS} generated requests: no 5xx, no error logged, refusals write nothing (seed ${SEED})`, { timeout: 3_600_000 }, async () => {
      const table = specs(f);
      const routes = routesOf(f.shop.service.app).filter((r) => table[r.method === 'HEAD' ? '' : `${r.method} ${r.url}`]);
      const port = Number(new URL(f.shop.baseUrl).port);
      const written = await writes();
      const counts = new Map<string, { requests: number; ms: number; byStatus: Record<number, number> }>();
      const started = Date.now();
      const arbitrary = fc.oneof(
        ...routes.map((route) => {
          const spec = table[`${route.method} ${route.url}`] as Spec;
          return { weight: spec.weight ?? 1, arbitrary: requestsOf(route, spec, f).map((request) => ({ route, request })) };
        }),
      );
      const outcome = await fc.check(
        fc.asyncProperty(arbitrary, async ({ route, request }) => {
          const key = `${route.method} ${route.url}`;
          await written.since();
          const errorsBefore = errorLines.length;
          const sent = Date.now();
          const { status, head } = await sendRaw(port, request);
          const count = counts.get(key) ?? { requests: 0, ms: 0, byStatus: {} };
          count.requests++;
          count.ms += Date.now() - sent;
          count.byStatus[status] = (count.byStatus[status] ?? 0) + 1;
          counts.set(key, count);
          const logged = errorLines.slice(errorsBefore).map((line) => line.slice(0, 1500));
          const detail = `${key} answered ${status}\n--- request\n${describeRequest(request)}\n--- answer\n${head}\n--- logged\n${logged.join('\n')}`;
          assert.ok(status >= 100 && status < 500, `no 5xx and an answer: ${detail}`);
          assert.equal(logged.length, 0, `no error logged: ${detail}`);
          assert.deepEqual(rejections, [], `no unhandled rejection: ${detail}`);
          if (status >= 400) {
            const unexpected = (await written.since()).filter(
              (w) =>
                !REFUSAL_WRITES.some(
                  (allowed) => allowed.route.test(`${request.method} ${route.url}`) && allowed.status.test(String(status)) && w.startsWith(`${allowed.table} `),
                ),
            );
            assert.deepEqual(unexpected, [], `a refusal wrote nothing: ${detail}`);
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true, ...(PATH ? { path: PATH } : {}) },
      );
      // The seed and path replay the failing request: TILL_FUZZ_SEED=… TILL_FUZZ_PATH=… (the request itself is in the message).
      if (outcome.failed) {
        const reason = outcome.errorInstance instanceof Error ? outcome.errorInstance.message : String(outcome.errorInstance);
        assert.fail(
          `fuzzing failed after ${outcome.numRuns} requests; replay with TILL_FUZZ_SEED=${outcome.seed} TILL_FUZZ_PATH=${outcome.counterexamplePath}\n${reason}`,
        );
      }
      // What refused proofs recorded stays within its bound: the signed rows (the unsigned count, payer '', is one row more).
      const crowded = await f.shop.service.context.db
        .selectFrom('payment_attempts')
        .select((eb) => ['session_id', eb.fn.countAll().as('rows')])
        .where('payer', '!=', '')
        .groupBy('session_id')
        .having((eb) => eb.fn.countAll(), '>', ATTEMPTS_PER_SESSION)
        .execute();
      assert.deepEqual(crowded, [], `at most ${ATTEMPTS_PER_SESSION} refused attempts per session`);
      const seconds = (Date.now() - started) / 1000;
      const lines = [...counts]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, c]) => `${key}\t${c.requests}\t${Math.round(c.ms / c.requests)} ms\t${JSON.stringify(c.byStatus)}`);
      process.stdout.write(`# fuzz ${engine}: ${RUNS} requests in ${seconds.toFixed(1)} s, seed ${SEED}, 0 answers >= 500\n# ${lines.join('\n# ')}\n`);
    });

    test(`${DOCUMENT_RUNS} generated client metadata documents at /oauth/authorize: no 5xx, no error logged, refusals write nothing (seed ${SEED})`, {
      timeout: 3_600_000,
    }, async () => {
      const written = await writes();
      const template = {
        client_id: OWN_URL,
        client_name: 'Fuzzed agent',
        redirect_uris: [`${f.site.origin}/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
      const query = fc.record({
        redirect_uri: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant(`${f.site.origin}/callback`) }),
        state: fc.oneof(fc.constant('s'), shortNasty),
        signedIn: fc.boolean(),
      });
      let served = 0;
      const byStatus: Record<number, number> = {};
      const outcome = await fc.check(
        fc.asyncProperty(servedDocument(template, 5 * 1024), query, async (document, { redirect_uri, state, signedIn }) => {
          const path = `/fuzzed/${++served}/client.json`;
          const clientId = f.site.serve(path, (_request, response) => {
            response.writeHead(document.status, document.headers).end(document.body(`${f.site.origin}${path}`));
          });
          await written.since();
          const errorsBefore = errorLines.length;
          const params = new URLSearchParams({
            response_type: 'code',
            client_id: clientId,
            code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
            code_challenge_method: 'S256',
            scope: 'settings:read orders:read',
            state: state.toWellFormed(),
            ...(redirect_uri ? { redirect_uri } : {}),
          });
          const headers = signedIn ? { cookie: f.cookie } : undefined;
          const answer = await fetch(`${f.shop.baseUrl}/oauth/authorize?${params}`, { redirect: 'manual', ...(headers ? { headers } : {}) });
          const body = await answer.text();
          byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
          const refusalWrites = answer.status >= 400 ? (await written.since()).filter((w) => !w.startsWith('rate_limit_windows ')) : [];
          // On to the consent screen, where the client's name is shown.
          let consent = { status: 0, body: '' };
          const location = answer.headers.get('location') ?? '';
          if (answer.status === 303 && location.startsWith('/oauth/consent/')) {
            const page = await fetch(new URL(location, f.shop.baseUrl), { redirect: 'manual', ...(headers ? { headers } : {}) });
            consent = { status: page.status, body: (await page.text()).slice(0, 300) };
          }
          const logged = errorLines.slice(errorsBefore).map((line) => line.slice(0, 1500));
          const sent = document.body(`${f.site.origin}${path}`);
          const detail = `document (HTTP ${document.status}, ${JSON.stringify(document.headers)}): ${JSON.stringify(sent.toString('utf8').slice(0, 600))}\nauthorize ?${params}\nanswered ${answer.status} ${location} ${body.slice(0, 300)}\nconsent ${consent.status} ${consent.body}\nlogged ${logged.join('\n')}`;
          assert.ok(answer.status < 500 && consent.status < 500, `no 5xx: ${detail}`);
          assert.equal(logged.length, 0, `no error logged: ${detail}`);
          assert.deepEqual(rejections, [], `no unhandled rejection: ${detail}`);
          assert.deepEqual(refusalWrites, [], `a refusal wrote nothing: ${detail}`);
        }),
        { numRuns: DOCUMENT_RUNS, seed: SEED, endOnFailure: true, ...(PATH ? { path: PATH } : {}) },
      );
      if (outcome.failed) {
        const reason = outcome.errorInstance instanceof Error ? outcome.errorInstance.message : String(outcome.errorInstance);
        assert.fail(
          `document fuzzing failed after ${outcome.numRuns} documents; replay with TILL_FUZZ_SEED=${outcome.seed} TILL_FUZZ_PATH=${outcome.counterexamplePath}\n${reason}`,
        );
      }
      assert.ok((byStatus[303] ?? 0) > 0, `some documents were good enough to reach consent: ${JSON.stringify(byStatus)}`);
      process.stdout.write(`# fuzz ${engine}: ${DOCUMENT_RUNS} client metadata documents, seed ${SEED}, answers ${JSON.stringify(byStatus)}\n`);
    });
  });
}
