// Notifications: the webhook URL and events (refusals naming the field, the outbound guard's
// warning), key and secret behind the password, rotation, a test event, the delivery log and
// redelivery; the orders received through the API (E1 only, newest first, paged); none of it
// reachable by another merchant's user.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createUser } from '../../accounts/users.ts';
import { createApiKey } from '../../merchants/api-keys.ts';
import { findSession } from '../../sessions/sessions.ts';
import { authorizedAgent, callMcpTool } from '../../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, csrfField, signedInMerchant } from '../../testing/page-browser.ts';
import { listDeliveries } from '../../webhooks/deliveries.ts';
import { getWebhook } from '../../webhooks/endpoints.ts';

const PATH = '/dashboard/notifications';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's notifications on ${engine}`, skip, () => {
    let service: TestService;
    let receiverUrl: string;
    const received: string[] = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push(body);
        response.writeHead(200, { 'content-type': 'text/plain' }).end('thanks <b>received</b>');
      });
    });
    before(async () => {
      service = await startTestService(engine, {}, { workers: true });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    });
    after(async () => {
      await service?.stop();
      receiver.close();
    });

    async function post(browser: Browser, path: string, form: [string, string][] | Record<string, string>) {
      const csrf = await browser.csrf(PATH);
      return browser.request('POST', path, Array.isArray(form) ? [['csrf', csrf], ...form] : { csrf, ...form });
    }
    async function deliveredOnce(merchantId: string, count: number) {
      for (let i = 0; i < 200; i++) {
        const deliveries = await listDeliveries(service.context.db, 'sandbox', { merchantId });
        if (deliveries.length >= count && deliveries.every((d) => d.status === 'SUCCEEDED')) return deliveries;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the deliveries were not sent');
    }

    test('signed out, the page sends the browser to sign in', async () => {
      assert.equal((await new Browser(service).request('GET', PATH)).statusCode, 303);
    });

    test('the URL and events are refused by field, nothing saved; a URL the guard refuses is saved with a clear warning', async () => {
      const owner = await signedInMerchant(service);
      const empty = await owner.browser.request('GET', PATH);
      assert.equal(empty.statusCode, 200);
      assert.match(empty.body, /No webhook URL yet/);
      for (const [form, text] of [
        [
          [
            ['url', 'not a url'],
            ['events', 'payment.succeeded'],
          ],
          /URL: .*is not an absolute URL.*Nothing was saved/,
        ],
        [
          [
            ['url', 'ftp://files.example/x'],
            ['events', 'payment.succeeded'],
          ],
          /URL: .*must be http or https/,
        ],
        [[['url', receiverUrl]], /Events: .*must name at least one event type/],
        [
          [
            ['url', receiverUrl],
            ['events', 'order.shipped'],
          ],
          /Events: .*unknown event type/,
        ],
        [[['url', '']], /URL: enter the address/],
      ] as const) {
        const refused = await post(owner.browser, `${PATH}/endpoint`, form as unknown as [string, string][]);
        assert.equal(refused.statusCode, 400, JSON.stringify(form));
        assert.match(refused.body, text);
        assert.match(refused.body, /aria-invalid="true"/);
      }
      assert.equal(await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'), undefined);

      const metadata = await post(owner.browser, `${PATH}/endpoint`, [
        ['url', 'http://169.254.169.254/latest'],
        ['events', 'payment.succeeded'],
      ]);
      assert.equal(metadata.statusCode, 200);
      assert.match(metadata.body, /Webhook settings saved/);
      assert.match(metadata.body, /role="alert" class="problem">Deliveries to this URL will not be sent: /);

      const saved = await post(owner.browser, `${PATH}/endpoint`, [
        ['url', receiverUrl],
        ['events', 'payment.succeeded'],
        ['events', 'payment.failed'],
      ]);
      assert.equal(saved.statusCode, 200);
      assert.doesNotMatch(saved.body, /will not be sent/);
      const endpoint = await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox');
      assert.equal(endpoint?.url, receiverUrl);
      assert.deepEqual(endpoint?.events, ['payment.succeeded', 'payment.failed']);
      assert.match(saved.body, /value="payment.failed" checked/);
      assert.doesNotMatch(saved.body, /value="session.expired" checked/);
    });

    test('key and secret: shown only after the password; rotation makes new ones', async () => {
      const owner = await signedInMerchant(service);
      await post(owner.browser, `${PATH}/endpoint`, [
        ['url', receiverUrl],
        ['events', 'payment.succeeded'],
      ]);
      const endpoint = (await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'))!;
      const page = await owner.browser.request('GET', PATH);
      assert.ok(!page.body.includes(endpoint.webhookKey) && !page.body.includes(endpoint.signingSecret));
      const wrong = await post(owner.browser, `${PATH}/reveal`, { password: 'not my password at all' });
      assert.equal(wrong.statusCode, 400);
      assert.match(wrong.body, /Password: that is not your password/);
      assert.ok(!wrong.body.includes(endpoint.signingSecret));
      const shown = await post(owner.browser, `${PATH}/reveal`, { password: owner.password });
      assert.equal(shown.statusCode, 200);
      assert.ok(shown.body.includes(endpoint.webhookKey) && shown.body.includes(endpoint.signingSecret));
      assert.equal(shown.headers['cache-control'], 'no-store');

      assert.equal((await post(owner.browser, `${PATH}/rotate`, { password: 'wrong password, surely' })).statusCode, 400);
      assert.equal((await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'))?.signingSecret, endpoint.signingSecret);
      const rotated = await post(owner.browser, `${PATH}/rotate`, { password: owner.password });
      assert.equal(rotated.statusCode, 200);
      const fresh = (await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'))!;
      assert.notEqual(fresh.signingSecret, endpoint.signingSecret);
      assert.notEqual(fresh.webhookKey, endpoint.webhookKey);
      assert.ok(rotated.body.includes(fresh.signingSecret));
      assert.match(rotated.body, /New key and signing secret made/);
    });

    test('a test event is delivered and logged with its attempt; redelivery sends it again', async () => {
      const owner = await signedInMerchant(service);
      const before = await post(owner.browser, `${PATH}/test`, {});
      assert.equal(before.statusCode, 409);
      assert.match(before.body, /No webhook URL is set yet/);
      await post(owner.browser, `${PATH}/endpoint`, [
        ['url', receiverUrl],
        ['events', 'payment.succeeded'],
      ]);
      const sent = await post(owner.browser, `${PATH}/test`, {});
      assert.equal(sent.statusCode, 303);
      assert.equal(sent.headers.location, `${PATH}?sent=1`);
      const [delivery] = await deliveredOnce(owner.merchantId, 1);
      const page = await owner.browser.request('GET', `${PATH}?sent=1`);
      assert.match(page.body, /Test event queued/);
      assert.match(page.body, /<code>webhook\.test<\/code> <span class="tag tag-granted">Delivered<\/span>/);
      assert.match(page.body, /HTTP <strong>200<\/strong> · \d+ ms/);
      assert.ok(page.body.includes('thanks &lt;b&gt;received&lt;/b&gt;'));
      assert.ok(page.body.includes(`action="${PATH}/events/${delivery!.eventId}/redeliver"`));

      const again = await post(owner.browser, `${PATH}/events/${delivery!.eventId}/redeliver`, {});
      assert.equal(again.statusCode, 303);
      assert.equal(again.headers.location, `${PATH}?redelivered=1`);
      const deliveries = await deliveredOnce(owner.merchantId, 2);
      assert.deepEqual(
        deliveries.map((d) => d.eventId),
        [delivery!.eventId, delivery!.eventId],
      );
    });

    test('a viewer sees the endpoint and the delivery log but none of the webhook forms; a developer sees them all', async () => {
      const owner = await signedInMerchant(service);
      await post(owner.browser, `${PATH}/endpoint`, [
        ['url', receiverUrl],
        ['events', 'payment.succeeded'],
      ]);
      await post(owner.browser, `${PATH}/test`, {});
      const [delivery] = await deliveredOnce(owner.merchantId, 1);
      const webhookForms = [
        ...['/endpoint', '/reveal', '/test', `/events/${delivery!.eventId}/redeliver`].map((path) => `action="${PATH}${path}"`),
        `formaction="${PATH}/rotate"`,
      ];
      for (const role of ['viewer', 'developer'] as const) {
        const email = `${role}-${engine}-${Date.now()}@shop.example`;
        await createUser(service.context.db, { merchantId: owner.merchantId, email, password: owner.password, role });
        const browser = new Browser(service);
        await browser.signIn(email, owner.password);
        const page = (await browser.request('GET', PATH)).body;
        assert.ok(page.includes(receiverUrl), `${role}: the endpoint is shown`);
        assert.match(page, /<code>webhook\.test<\/code>/, `${role}: the delivery log is shown`);
        assert.ok(page.includes(`action="${PATH}/mail"`), `${role}: their own email notices stay`);
        for (const form of webhookForms) assert.equal(page.includes(form), role === 'developer', `${role}: ${form}`);
        if (role === 'viewer') assert.match(page, /Your role, Viewer, cannot/);
        else assert.doesNotMatch(page, /Your role, Developer, cannot/);
      }
    });

    test('orders received through the API: only E1 sessions, newest first, 25 a page, each with its link page; not another merchant’s', async () => {
      const owner = await signedInMerchant(service, { walletAddress: '0x1111111111111111111111111111111111111111' });
      const { apiKey } = await createApiKey(service.context.db, owner.merchantId, 'test');
      const e1 = async (key: string, payload: Record<string, unknown>) => {
        const answer = await service.app.inject({
          method: 'POST',
          url: '/api/checkout/v2/payment_session',
          headers: { 'x-sc-apikey': key, 'content-type': 'application/json' },
          payload,
        });
        assert.equal(answer.statusCode, 201, answer.body);
        return (answer.json() as { sessionId: string }).sessionId;
      };
      const empty = await owner.browser.request('GET', PATH);
      assert.match(empty.body, /<h2 id="api-orders">Orders received through the API<\/h2>/);
      assert.match(empty.body, /No order received through the API yet/);

      const apiIds: string[] = [];
      for (let i = 1; i <= 27; i++) {
        apiIds.push(await e1(apiKey, { amount: i + 0.5, currency: 'USD', orderId: `api-order-${i}` }));
        // On the clock: one millisecond apart at least, so the sessions' creation times give a known order.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const csrf = await owner.browser.csrf('/dashboard/links');
      const link = await owner.browser.request('POST', '/dashboard/links', {
        csrf,
        currency: 'USD',
        amount: '9',
        orderType: 'STATIC',
        concept: 'Made on the dashboard',
      });
      const linkId = /\/dashboard\/links\/(ps_[\w-]+)\?/.exec(String(link.headers.location))![1]!;
      const agent = await authorizedAgent(service.context, owner.merchantId, ['sessions:write']);
      const mcp = (await callMcpTool(service.app, agent.accessToken, 'create_payment_session', { amount: 3, currency: 'USD' })).body.result.structuredContent;
      const other = await signedInMerchant(service);
      const otherKey = (await createApiKey(service.context.db, other.merchantId, 'test')).apiKey;
      const othersId = await e1(otherKey, { amount: 1, currency: 'USD', orderId: 'someone-elses' });

      const origin = async (id: string) => (await findSession(service.context.db, id))?.created_via;
      assert.equal(await origin(apiIds[0]!), 'api');
      assert.equal(await origin(linkId), 'dashboard');
      assert.equal(await origin(mcp.sessionId as string), 'mcp');

      const sessionsOf = (html: string) => [...html.matchAll(/<td data-label="Session"><code>(ps_[\w-]+)<\/code>/g)].map((m) => m[1]!);
      const timesOf = (html: string) => [...html.matchAll(/<td data-label="Created"><time datetime="([^"]+)"/g)].map((m) => Date.parse(m[1]!));
      const first = await owner.browser.request('GET', PATH);
      assert.equal(first.statusCode, 200);
      const firstIds = sessionsOf(first.body);
      assert.equal(firstIds.length, 25);
      assert.deepEqual(firstIds, apiIds.slice(2).reverse(), 'newest first');
      const times = timesOf(first.body);
      assert.ok(times.every((t, i) => i === 0 || t <= times[i - 1]!));
      assert.ok(first.body.includes('<td data-label="Order id"><code>api-order-27</code></td>'));
      assert.match(first.body, /<td data-label="Amount">27\.50 USD<\/td>/);
      assert.match(first.body, /<td data-label="Status">Open<\/td>/);
      assert.ok(first.body.includes(`href="/dashboard/links/${firstIds[0]}"`));
      const older = /<a rel="next" href="([^"]+)">Older API orders<\/a>/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(older?.startsWith(`${PATH}?after=`) && older.endsWith('#api-orders'), older);
      const second = await owner.browser.request('GET', older!.replace('#api-orders', ''));
      assert.equal(second.statusCode, 200);
      const secondIds = sessionsOf(second.body);
      assert.deepEqual(secondIds, [apiIds[1], apiIds[0]]);
      assert.doesNotMatch(second.body, /Older API orders/);
      for (const page of [first.body, second.body]) {
        assert.ok(!page.includes(linkId) && !page.includes(mcp.sessionId as string) && !page.includes(othersId));
        assert.ok(!page.includes('someone-elses'));
      }
      const detail = await owner.browser.request('GET', `/dashboard/links/${firstIds[0]}`);
      assert.equal(detail.statusCode, 200);

      const bad = await owner.browser.request('GET', `${PATH}?after=not-a-cursor`);
      assert.equal(bad.statusCode, 400);
      assert.match(bad.body, /Page: that is not a page of the API orders list/);
      const theirs = await other.browser.request('GET', PATH);
      assert.deepEqual(sessionsOf(theirs.body), [othersId]);
    });

    test('form posts without the CSRF token are refused (403) and change nothing', async () => {
      const owner = await signedInMerchant(service);
      for (const path of [`${PATH}/endpoint`, `${PATH}/reveal`, `${PATH}/rotate`, `${PATH}/test`, `${PATH}/events/evt_x/redeliver`]) {
        const refused = await owner.browser.request('POST', path, { url: receiverUrl, events: 'payment.succeeded', password: owner.password });
        assert.equal(refused.statusCode, 403, path);
      }
      assert.equal(await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'), undefined);
    });

    test('another merchant’s user sees none of the deliveries, URL or secrets, and cannot redeliver by id (404)', async () => {
      const owner = await signedInMerchant(service);
      await post(owner.browser, `${PATH}/endpoint`, [
        ['url', `${receiverUrl}?owner`],
        ['events', 'payment.succeeded'],
      ]);
      await post(owner.browser, `${PATH}/test`, {});
      const [delivery] = await deliveredOnce(owner.merchantId, 1);
      const other = await signedInMerchant(service);
      await post(other.browser, `${PATH}/endpoint`, [
        ['url', receiverUrl],
        ['events', 'payment.succeeded'],
      ]);
      const page = await other.browser.request('GET', PATH);
      assert.ok(!page.body.includes(delivery!.eventId));
      assert.ok(!page.body.includes('?owner'));
      const refused = await post(other.browser, `${PATH}/events/${delivery!.eventId}/redeliver`, {});
      assert.equal(refused.statusCode, 404);
      assert.match(refused.body, /No such event/);
      assert.equal((await listDeliveries(service.context.db, 'sandbox', { merchantId: owner.merchantId })).length, 1);
      const shown = await post(other.browser, `${PATH}/reveal`, { password: other.password });
      const mine = (await getWebhook(service.context.db, service.config.secretKey, owner.merchantId, 'sandbox'))!;
      assert.ok(!shown.body.includes(mine.signingSecret));
      assert.equal(csrfField(shown.body).length > 0, true);
    });
  });
}
