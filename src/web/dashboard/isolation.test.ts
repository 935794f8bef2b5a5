// One merchant's dashboard objects out of another's reach: merchant A has an API key, a client, a
// payment link, a paid order, a webhook endpoint with a delivery, a coding agent's grant and its
// audit rows; merchant B's signed-in user tries every dashboard route (enumerated from the app's
// routes, so a new one cannot be missed) with A's ids and sees 404 or none of A's objects, and A's
// rows are unchanged afterwards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../accounts/users.ts';
import { recordToolCall } from '../../mcp/audit.ts';
import { setAccentColor } from '../../merchants/brand.ts';
import { authorizedAgent } from '../../testing/agent.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { Browser, type Form, signedInMerchant } from '../../testing/page-browser.ts';
import { getWebhook } from '../../webhooks/endpoints.ts';

const PASSWORD = 'correct horse battery staple';
const MERCHANT_TABLES = [
  'api_keys',
  'payment_sessions',
  'payments',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'users',
  'oauth_clients',
  'oauth_grants',
  'mcp_tool_calls',
  'merchant_events',
  'merchant_brands',
  'payment_attempts',
  'refunds',
  'invitations',
] as const;

for (const { engine, skip } of engines) {
  describeOnEngine(`one merchant's dashboard objects out of another's reach on ${engine}`, skip, () => {
    let shop: PayingShop;
    let owner: Browser;
    /** A's ids and secrets, none of which may appear in an answer to B (unless B sent it in the request). */
    const a = {
      keyId: '',
      keyLastFour: '',
      clientId: '',
      linkId: '',
      paidSessionId: '',
      orderId: `shop-a-order-${Date.now()}`,
      publicOrderId: '',
      webhookUrl: 'http://127.0.0.1:9/shop-a-hooks',
      eventId: '',
      webhookKey: '',
      signingSecret: '',
      grantId: '',
      agentClientId: '',
      agentName: 'Test agent',
      tool: 'shop_a_private_tool',
      name: 'Shop A Roastery',
      wallet: '',
      userId: '',
      invitationId: '',
      invitee: `invitee-of-a-${Date.now()}@shop.example`,
    };

    before(async () => {
      shop = await startPayingShop(engine, {}, { name: a.name });
      a.wallet = shop.merchantWallet;
      const { sessionId, payer, offer } = await shop.readyToPay({ amount: 0.01, currency: 'USD', orderId: a.orderId });
      const paid = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
      assert.equal(paid.status, 200);
      a.paidSessionId = sessionId;
      a.publicOrderId = ((await paid.json()) as { paymentId: string }).paymentId;

      // A's user makes the rest through the dashboard.
      const email = `shop-a-${engine}-${Date.now()}@shop.example`;
      a.userId = (await createUser(shop.service.context.db, { merchantId: shop.merchantId, email, password: PASSWORD })).id;
      owner = new Browser(shop.service);
      assert.equal((await owner.signIn(email, PASSWORD)).statusCode, 303);
      const csrf = await owner.csrf('/dashboard/get-paid');
      await owner.request('POST', '/dashboard/get-paid/api-keys', { csrf });
      const clientPage = await owner.request('POST', '/dashboard/get-paid/clients', { csrf });
      a.clientId = /id="new-client-id" type="text" readonly value="(cli_[\w-]+)"/.exec(clientPage.body)![1]!;
      a.keyId = /api-keys\/(key_[^/]+)\/revoke/.exec(clientPage.body)![1]!;
      const key = await shop.service.context.db.selectFrom('api_keys').select('last_four').where('id', '=', a.keyId).executeTakeFirstOrThrow();
      a.keyLastFour = key.last_four;
      const link = await owner.request('POST', '/dashboard/links', { csrf, currency: 'USD', orderType: 'STATIC', amount: '3', concept: 'Shop A beans' });
      a.linkId = /^\/dashboard\/links\/(ps_[\w-]+)\?/.exec(String(link.headers.location))![1]!;
      await owner.request('POST', '/dashboard/notifications/endpoint', [
        ['csrf', csrf],
        ['url', a.webhookUrl],
        ['events', 'payment.succeeded'],
      ]);
      await owner.request('POST', '/dashboard/notifications/test', { csrf });
      const delivery = await shop.service.context.db
        .selectFrom('webhook_deliveries')
        .select('event_id')
        .where('merchant_id', '=', shop.merchantId)
        .executeTakeFirstOrThrow();
      a.eventId = delivery.event_id;
      const webhook = (await getWebhook(shop.service.context.db, shop.service.config.secretKey, shop.merchantId, 'sandbox'))!;
      a.webhookKey = webhook.webhookKey;
      a.signingSecret = webhook.signingSecret;
      await owner.request('POST', '/dashboard/team/invitations', { csrf, email: a.invitee, role: 'developer' });
      a.invitationId = /team\/invitations\/(inv_[\w-]+)\/revoke/.exec((await owner.request('GET', '/dashboard/team')).body)![1]!;
      const agent = await authorizedAgent(shop.service.context, shop.merchantId, ['orders:read']);
      a.grantId = agent.grantId;
      a.agentClientId = agent.clientId;
      await recordToolCall(
        shop.service.context.db,
        {
          grantId: agent.grantId,
          clientId: agent.clientId,
          merchantId: shop.merchantId,
          mode: agent.mode,
          tool: a.tool,
          outcome: 'ok',
          reason: null,
          arguments: { size: 1 },
        },
        Date.now(),
      );
    });
    after(() => shop?.stop());

    /** Every row of A's in the tables that hold merchants' objects. */
    async function rowsOfA() {
      const db = shop.service.context.db;
      const rows: Record<string, unknown[]> = {
        merchants: await db.selectFrom('merchants').selectAll().where('id', '=', shop.merchantId).execute(),
      };
      const key = (row: unknown) => JSON.stringify(row, (_name, value) => (typeof value === 'bigint' ? String(value) : value));
      for (const table of MERCHANT_TABLES) {
        const found = await db.selectFrom(table).selectAll().where('merchant_id', '=', shop.merchantId).execute();
        rows[table] = found.sort((x, y) => key(x).localeCompare(key(y)));
      }
      return rows;
    }

    test('B tries every dashboard route with A’s ids: 404 or none of A’s objects, and A’s rows are unchanged', async () => {
      // A sees its own objects on its pages: the ids looked for below are the ones the pages show.
      for (const [path, ids] of [
        ['/dashboard/get-paid', [a.keyId, a.clientId]],
        ['/dashboard/links', [a.linkId]],
        ['/dashboard/orders', [a.publicOrderId, a.paidSessionId, a.orderId]],
        ['/dashboard/notifications', [a.eventId, a.webhookUrl]],
        ['/dashboard/developers', [a.grantId, a.tool]],
        ['/dashboard/team', [a.invitationId, a.userId, a.invitee]],
        ['/dashboard/activity', [a.invitee, a.clientId]],
      ] as const) {
        const page = await owner.request('GET', path);
        for (const id of ids) assert.ok(page.body.includes(id), `A's ${path} shows ${id}`);
      }
      // A's brand, which B's brand forms must leave as it is.
      await setAccentColor(shop.service.context.db, shop.merchantId, '#7c2d12');
      const before = await rowsOfA();
      assert.equal(before.merchant_brands!.length, 1, 'A has a brand');
      for (const table of ['api_keys', 'payment_sessions', 'payments', 'webhook_deliveries', 'oauth_grants', 'mcp_tool_calls'] as const)
        assert.ok(before[table]!.length > 0, `A has ${table}`);
      const b = await signedInMerchant(shop.service);
      const secrets = Object.entries(a).filter(([, value]) => value !== '' && value !== 'Test agent');
      const csrf = await b.browser.csrf('/dashboard');

      /** B's request; its answer is checked for A's ids, except those B sent. */
      async function tryAs(method: 'GET' | 'POST', url: string, form?: Form) {
        const response = await b.browser.request(method, url, form && (Array.isArray(form) ? [['csrf', csrf], ...form] : { csrf, ...form }));
        const sent = `${url} ${JSON.stringify(form ?? {})}`;
        // B stays signed in and its CSRF token is taken: every refusal below is about A's objects.
        assert.notEqual(response.statusCode, 403, `${method} ${url}: ${response.body.slice(0, 200)}`);
        assert.doesNotMatch(String(response.headers.location ?? ''), /sign-in/, `${method} ${url}`);
        if (method === 'GET') assert.equal(response.statusCode === 200 || response.statusCode === 404, true, `${method} ${url}: ${response.statusCode}`);
        for (const [name, value] of secrets)
          if (!sent.includes(value)) assert.ok(!response.body.includes(value), `${method} ${url} shows A's ${name}: ${value}`);
        return response;
      }
      const notFound = async (method: 'GET' | 'POST', url: string, form?: Form) =>
        assert.equal((await tryAs(method, url, form)).statusCode, 404, `${method} ${url}`);
      const csvRows = async (query: string) => (await tryAs('GET', `/dashboard/orders.csv?${query}`)).body.split('\r\n').filter(Boolean).length - 1;

      // Each dashboard route, and what B tries there.
      const attempts: Record<string, () => Promise<void>> = {
        'GET /dashboard': async () => {
          await tryAs('GET', '/dashboard');
        },
        'GET /dashboard/settings': async () => {
          await tryAs('GET', '/dashboard/settings');
        },
        'POST /dashboard/settings/business': async () => {
          await tryAs('POST', '/dashboard/settings/business', { name: 'Shop B', merchantId: shop.merchantId, merchant_id: shop.merchantId });
        },
        'POST /dashboard/settings/wallet': async () => {
          const wallet = '0x2222222222222222222222222222222222222222';
          await tryAs('POST', '/dashboard/settings/wallet', { wallet, confirm: '2222', password: b.password, merchantId: shop.merchantId });
        },
        'POST /dashboard/settings/chains': async () => {
          await tryAs('POST', '/dashboard/settings/chains', [
            ['accept', 'base:USDC'],
            ['merchantId', shop.merchantId],
          ]);
        },
        // The brand is always the signed-in merchant's: a merchant id in the form changes nothing of A's.
        'POST /dashboard/settings/accent': async () => {
          await tryAs('POST', '/dashboard/settings/accent', { accent: '#0f766e', merchantId: shop.merchantId, merchant_id: shop.merchantId });
        },
        'POST /dashboard/settings/logo': async () => {
          await tryAs('POST', '/dashboard/settings/logo', { merchantId: shop.merchantId, merchant_id: shop.merchantId });
        },
        'POST /dashboard/settings/logo/remove': async () => {
          await tryAs('POST', '/dashboard/settings/logo/remove', { merchantId: shop.merchantId, merchant_id: shop.merchantId });
        },
        'GET /dashboard/account': async () => {
          await tryAs('GET', '/dashboard/account');
        },
        'POST /dashboard/account/password': async () => {
          await tryAs('POST', '/dashboard/account/password', {
            current_password: b.password,
            new_password: 'a new and long password',
            new_password_again: 'x',
          });
        },
        'POST /dashboard/account/sign-out-everywhere': async () => {}, // tried last, below: it signs B out
        // Second factors are the signed-in user's own, and the two-factor rule the signed-in merchant's: ids of A's change nothing of A's.
        'GET /dashboard/account/two-factor': async () => {
          await tryAs('GET', '/dashboard/account/two-factor');
        },
        'POST /dashboard/account/two-factor/totp': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/totp', { merchantId: shop.merchantId, userId: a.userId });
        },
        'POST /dashboard/account/two-factor/totp/confirm': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/totp/confirm', { code: '123456', userId: a.userId });
        },
        'POST /dashboard/account/two-factor/recovery-codes': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/recovery-codes', { userId: a.userId });
        },
        'POST /dashboard/account/two-factor/totp/remove': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/totp/remove', { userId: a.userId });
        },
        'POST /dashboard/account/two-factor/passkeys/options': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/passkeys/options', { userId: a.userId });
        },
        'POST /dashboard/account/two-factor/passkeys': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/passkeys', { name: 'B', response: '{"id":"x"}', userId: a.userId });
        },
        'POST /dashboard/account/two-factor/passkeys/{id}/remove': () => notFound('POST', '/dashboard/account/two-factor/passkeys/pk_of_a/remove', {}),
        'POST /dashboard/account/two-factor/require': async () => {
          await tryAs('POST', '/dashboard/account/two-factor/require', { required: 'yes', merchantId: shop.merchantId, merchant_id: shop.merchantId });
        },
        'GET /dashboard/get-paid': async () => {
          const page = await tryAs('GET', '/dashboard/get-paid');
          assert.ok(!page.body.includes(`…${a.keyLastFour}<`));
        },
        'POST /dashboard/get-paid/api-keys': async () => {
          await tryAs('POST', '/dashboard/get-paid/api-keys', { merchantId: shop.merchantId });
        },
        'POST /dashboard/get-paid/clients': async () => {
          await tryAs('POST', '/dashboard/get-paid/clients', { merchantId: shop.merchantId });
        },
        'POST /dashboard/get-paid/api-keys/{id}/revoke': () => notFound('POST', `/dashboard/get-paid/api-keys/${a.keyId}/revoke`, {}),
        'POST /dashboard/account/api-keys/{keyId}/revoke': () => notFound('POST', `/dashboard/account/api-keys/${a.keyId}/revoke`, {}),
        'POST /dashboard/get-paid/clients/{id}/revoke': () => notFound('POST', `/dashboard/get-paid/clients/${a.clientId}/revoke`, {}),
        'GET /dashboard/links': async () => {
          await tryAs('GET', '/dashboard/links');
          await tryAs('GET', '/dashboard/links?archived=1');
          await tryAs('GET', '/dashboard/links?page=2');
        },
        'POST /dashboard/links': async () => {
          await tryAs('POST', '/dashboard/links', { currency: 'USD', orderType: 'STATIC', amount: '1', concept: 'Shop B', sessionId: a.linkId });
        },
        'GET /dashboard/links/{sessionId}': async () => {
          await notFound('GET', `/dashboard/links/${a.linkId}`);
          await notFound('GET', `/dashboard/links/${a.paidSessionId}`);
        },
        'POST /dashboard/links/{sessionId}': () => notFound('POST', `/dashboard/links/${a.linkId}`, { currency: 'USD', amount: '99', concept: 'Taken over' }),
        'POST /dashboard/links/{sessionId}/archive': () => notFound('POST', `/dashboard/links/${a.linkId}/archive`, {}),
        'POST /dashboard/orders/{paymentId}/refund/prepare': () => notFound('POST', `/dashboard/orders/${a.publicOrderId}/refund/prepare`, { amount: '0.01' }),
        'POST /dashboard/orders/{paymentId}/refund': () =>
          notFound('POST', `/dashboard/orders/${a.publicOrderId}/refund`, { amount: '0.01', validBefore: '1', nonce: '0x', signature: '0x' }),
        'GET /dashboard/orders': async () => {
          await tryAs('GET', '/dashboard/orders');
          for (const query of [`session=${a.paidSessionId}`, `session=${a.linkId}`, `q=${a.publicOrderId}`, `q=${a.orderId}`, 'status=SUCCESS']) {
            const page = await tryAs('GET', `/dashboard/orders?${query}`);
            assert.doesNotMatch(page.body, /<code>TX-[0-9A-F]{32}<\/code>/, query);
          }
        },
        'GET /dashboard/orders.csv': async () => {
          assert.equal(await csvRows(''), 0);
          assert.equal(await csvRows(`session=${a.paidSessionId}`), 0);
          assert.equal(await csvRows(`q=${a.publicOrderId}`), 0);
          assert.equal(await csvRows(`q=${a.orderId}`), 0);
        },
        'GET /dashboard/notifications': async () => {
          await tryAs('GET', '/dashboard/notifications');
        },
        'POST /dashboard/notifications/endpoint': async () => {
          await tryAs('POST', '/dashboard/notifications/endpoint', [
            ['url', 'http://127.0.0.1:9/shop-b-hooks'],
            ['events', 'payment.succeeded'],
            ['merchantId', shop.merchantId],
          ]);
        },
        'POST /dashboard/notifications/reveal': async () => {
          await tryAs('POST', '/dashboard/notifications/reveal', { password: b.password, merchantId: shop.merchantId });
        },
        'POST /dashboard/notifications/rotate': async () => {
          await tryAs('POST', '/dashboard/notifications/rotate', { password: b.password, merchantId: shop.merchantId });
        },
        'POST /dashboard/notifications/test': async () => {
          await tryAs('POST', '/dashboard/notifications/test', { merchantId: shop.merchantId });
        },
        // A user's own notice choices: B's, whatever merchant id B names.
        'POST /dashboard/notifications/mail': async () => {
          await tryAs('POST', '/dashboard/notifications/mail', [
            ['notices', 'payments'],
            ['summary', 'weekly'],
            ['merchantId', shop.merchantId],
          ]);
        },
        'POST /dashboard/notifications/events/{eventId}/redeliver': () => notFound('POST', `/dashboard/notifications/events/${a.eventId}/redeliver`, {}),
        'GET /dashboard/developers': async () => {
          await tryAs('GET', '/dashboard/developers');
          for (const query of [`grant=${a.grantId}`, `tool=${a.tool}`, `grant=${a.grantId}&tool=${a.tool}&outcome=ok`]) {
            const page = await tryAs('GET', `/dashboard/developers?${query}`);
            assert.doesNotMatch(page.body, /<table class="cards audit">/, query);
          }
        },
        'POST /dashboard/developers/agents/{grantId}/revoke': () => notFound('POST', `/dashboard/developers/agents/${a.grantId}/revoke`, {}),
        // B cannot set limits on A's agent: 404, and A's agent keeps none.
        'POST /dashboard/developers/agents/{grantId}/refund-limits': async () => {
          await notFound('POST', `/dashboard/developers/agents/${a.grantId}/refund-limits`, { perRefund: '100', perDay: '100' });
          const limits = await shop.service.context.db
            .selectFrom('oauth_grants')
            .select(['refund_limit_per_refund', 'refund_limit_per_day'])
            .where('id', '=', a.grantId)
            .executeTakeFirstOrThrow();
          assert.deepEqual({ ...limits }, { refund_limit_per_refund: null, refund_limit_per_day: null });
        },
        'GET /dashboard/team': async () => {
          await tryAs('GET', '/dashboard/team');
        },
        'POST /dashboard/team/invitations': async () => {
          await tryAs('POST', '/dashboard/team/invitations', { email: `invitee-of-b-${Date.now()}@shop.example`, role: 'viewer', merchantId: shop.merchantId });
        },
        'POST /dashboard/team/invitations/{id}/revoke': () => notFound('POST', `/dashboard/team/invitations/${a.invitationId}/revoke`, {}),
        'POST /dashboard/team/members/{userId}/role': () => notFound('POST', `/dashboard/team/members/${a.userId}/role`, { role: 'viewer' }),
        'POST /dashboard/team/members/{userId}/remove': () => notFound('POST', `/dashboard/team/members/${a.userId}/remove`, {}),
        'GET /dashboard/activity': async () => {
          for (const query of ['', `who=${a.userId}`, 'what=api_key_created', 'who=agent']) {
            const page = await tryAs('GET', `/dashboard/activity?${query}`);
            assert.ok(!page.body.includes(a.invitee), query);
          }
        },
        'GET /dashboard/activity.csv': async () => {
          const csv = await tryAs('GET', `/dashboard/activity.csv?who=${a.userId}`);
          assert.equal(csv.body.split('\r\n').filter(Boolean).length, 1, 'the header only');
        },
        // The switch only picks which of B's own data B sees.
        'POST /dashboard/mode': async () => {
          await tryAs('POST', '/dashboard/mode', { mode: 'live', section: 'orders', merchantId: shop.merchantId });
        },
      };

      const routes = shop.service.app.routeDocs.filter((doc) => doc.url.startsWith('/dashboard')).map((doc) => `${doc.method} ${doc.url}`);
      assert.deepEqual([...routes].sort(), Object.keys(attempts).sort(), 'every dashboard route is tried');
      for (const [route, attempt] of Object.entries(attempts)) await attempt().catch((error: Error) => Promise.reject(new Error(`${route}: ${error.message}`)));

      const signedOut = await b.browser.request('POST', '/dashboard/account/sign-out-everywhere', { csrf, merchantId: shop.merchantId });
      assert.equal(signedOut.headers.location, '/sign-in');
      assert.equal((await b.browser.request('GET', '/dashboard')).statusCode, 303, 'B is signed out');
      assert.equal((await owner.request('GET', '/dashboard')).statusCode, 200, 'A is still signed in');
      assert.deepEqual(await rowsOfA(), before);
      // B's own objects were made for B.
      const keysOfB = await shop.service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', b.merchantId).execute();
      assert.ok(keysOfB.length >= 2);
    });
  });
}
