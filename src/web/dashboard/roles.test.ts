// Every dashboard route and form × every role: allowed or the 403 page, as the permission table
// (accounts/roles.ts) says for the permission the route names. The routes are the app's own, so a
// new route without a permission, or without a request tried here, fails this test.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { can, ROLES, type Role } from '../../accounts/roles.ts';
import { createUser } from '../../accounts/users.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, type Form, signedInMerchant } from '../../testing/page-browser.ts';
import { ROLE_REFUSED_HEADING } from './guard.ts';
import { permissionOf } from './page-route.ts';

const PASSWORD = 'correct horse battery staple';
const NONE = 'none_of_ours';

/** What each route is sent: bogus ids (404 when allowed), forms too empty to change anything but what is harmless to change. */
const REQUESTS: Record<string, { url: string; form?: Form }> = {
  'GET /dashboard': { url: '/dashboard' },
  'POST /dashboard/mode': { url: '/dashboard/mode', form: { mode: 'test', section: 'overview' } },
  'GET /dashboard/settings': { url: '/dashboard/settings' },
  'POST /dashboard/settings/business': { url: '/dashboard/settings/business', form: { name: '' } },
  'POST /dashboard/settings/wallet': { url: '/dashboard/settings/wallet', form: { wallet: 'not a wallet' } },
  'POST /dashboard/settings/chains': { url: '/dashboard/settings/chains', form: {} },
  'POST /dashboard/settings/logo': { url: '/dashboard/settings/logo', form: {} },
  'POST /dashboard/settings/logo/remove': { url: '/dashboard/settings/logo/remove', form: {} },
  'POST /dashboard/settings/accent': { url: '/dashboard/settings/accent', form: { accent_color: 'red' } },
  'GET /dashboard/account': { url: '/dashboard/account' },
  'POST /dashboard/account/password': { url: '/dashboard/account/password', form: { new_password: 'short' } },
  'POST /dashboard/account/api-keys/{keyId}/revoke': { url: `/dashboard/account/api-keys/${NONE}/revoke`, form: {} },
  'POST /dashboard/account/sign-out-everywhere': { url: '/dashboard/account/sign-out-everywhere', form: {} },
  'GET /dashboard/get-paid': { url: '/dashboard/get-paid' },
  'POST /dashboard/get-paid/api-keys': { url: '/dashboard/get-paid/api-keys', form: {} },
  'POST /dashboard/get-paid/clients': { url: '/dashboard/get-paid/clients', form: {} },
  'POST /dashboard/get-paid/api-keys/{id}/revoke': { url: `/dashboard/get-paid/api-keys/${NONE}/revoke`, form: {} },
  'POST /dashboard/get-paid/clients/{id}/revoke': { url: `/dashboard/get-paid/clients/${NONE}/revoke`, form: {} },
  'GET /dashboard/links': { url: '/dashboard/links' },
  'POST /dashboard/links': { url: '/dashboard/links', form: { currency: 'USD', orderType: 'STATIC', amount: '' } },
  'GET /dashboard/links/{sessionId}': { url: `/dashboard/links/${NONE}` },
  'POST /dashboard/links/{sessionId}': { url: `/dashboard/links/${NONE}`, form: { amount: '1' } },
  'POST /dashboard/links/{sessionId}/archive': { url: `/dashboard/links/${NONE}/archive`, form: {} },
  'GET /dashboard/orders': { url: '/dashboard/orders' },
  'GET /dashboard/orders.csv': { url: '/dashboard/orders.csv' },
  'POST /dashboard/orders/{paymentId}/refund/prepare': { url: `/dashboard/orders/${NONE}/refund/prepare`, form: { amount: '1' } },
  'POST /dashboard/orders/{paymentId}/refund': { url: `/dashboard/orders/${NONE}/refund`, form: { amount: '1' } },
  'GET /dashboard/notifications': { url: '/dashboard/notifications' },
  'POST /dashboard/notifications/endpoint': { url: '/dashboard/notifications/endpoint', form: { url: '' } },
  'POST /dashboard/notifications/reveal': { url: '/dashboard/notifications/reveal', form: { password: 'wrong' } },
  'POST /dashboard/notifications/rotate': { url: '/dashboard/notifications/rotate', form: { password: 'wrong' } },
  'POST /dashboard/notifications/test': { url: '/dashboard/notifications/test', form: {} },
  'POST /dashboard/notifications/mail': { url: '/dashboard/notifications/mail', form: { summary: 'hourly' } },
  'POST /dashboard/notifications/events/{eventId}/redeliver': { url: `/dashboard/notifications/events/${NONE}/redeliver`, form: {} },
  'GET /dashboard/developers': { url: '/dashboard/developers' },
  'POST /dashboard/developers/agents/{grantId}/revoke': { url: `/dashboard/developers/agents/${NONE}/revoke`, form: {} },
  'POST /dashboard/developers/agents/{grantId}/refund-limits': { url: `/dashboard/developers/agents/${NONE}/refund-limits`, form: { perRefund: 'x' } },
  'GET /dashboard/account/two-factor': { url: '/dashboard/account/two-factor' },
  'POST /dashboard/account/two-factor/totp': { url: '/dashboard/account/two-factor/totp', form: {} },
  'POST /dashboard/account/two-factor/totp/confirm': { url: '/dashboard/account/two-factor/totp/confirm', form: { code: '000000' } },
  'POST /dashboard/account/two-factor/recovery-codes': { url: '/dashboard/account/two-factor/recovery-codes', form: {} },
  'POST /dashboard/account/two-factor/totp/remove': { url: '/dashboard/account/two-factor/totp/remove', form: {} },
  'POST /dashboard/account/two-factor/require': { url: '/dashboard/account/two-factor/require', form: { require: 'on' } },
  'POST /dashboard/account/two-factor/passkeys/options': { url: '/dashboard/account/two-factor/passkeys/options', form: {} },
  'POST /dashboard/account/two-factor/passkeys': { url: '/dashboard/account/two-factor/passkeys', form: { response: '{}' } },
  'POST /dashboard/account/two-factor/passkeys/{id}/remove': { url: `/dashboard/account/two-factor/passkeys/${NONE}/remove`, form: {} },
  'GET /dashboard/team': { url: '/dashboard/team' },
  'POST /dashboard/team/invitations': { url: '/dashboard/team/invitations', form: { email: '', role: 'viewer' } },
  'POST /dashboard/team/invitations/{id}/revoke': { url: `/dashboard/team/invitations/${NONE}/revoke`, form: {} },
  'POST /dashboard/team/members/{userId}/role': { url: `/dashboard/team/members/${NONE}/role`, form: { role: 'viewer' } },
  'POST /dashboard/team/members/{userId}/remove': { url: `/dashboard/team/members/${NONE}/remove`, form: {} },
  'GET /dashboard/activity': { url: '/dashboard/activity' },
  'GET /dashboard/activity.csv': { url: '/dashboard/activity.csv' },
};

for (const { engine, skip } of engines) {
  describeOnEngine(`every dashboard route × every role on ${engine}`, skip, () => {
    let service: TestService;
    const browsers = new Map<Role, Browser>();
    let merchantId = '';

    before(async () => {
      service = await startTestService(engine);
      const owner = await signedInMerchant(service);
      merchantId = owner.merchantId;
      browsers.set('owner', owner.browser);
      for (const role of ROLES.filter((r) => r !== 'owner')) {
        const email = `${role}-${engine}-${Date.now()}@shop.example`;
        await createUser(service.context.db, { merchantId, email, password: PASSWORD, role });
        const browser = new Browser(service);
        assert.equal((await browser.signIn(email, PASSWORD)).statusCode, 303);
        browsers.set(role, browser);
      }
    });
    after(() => service?.stop());

    test('each route names a permission, and each role is allowed or refused with the 403 page exactly as the table says', async () => {
      const docs = service.app.routeDocs.filter((doc) => doc.url.startsWith('/dashboard'));
      const routes = docs.map((doc) => `${doc.method} ${doc.url}`);
      assert.deepEqual([...routes].sort(), Object.keys(REQUESTS).sort(), 'every dashboard route has a request here');
      const unnamed = docs.filter((doc) => permissionOf(doc) === undefined).map((doc) => `${doc.method} ${doc.url}`);
      assert.deepEqual(unnamed, [], 'every dashboard route names its permission');

      const keysBefore = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      // Signing out everywhere is tried last: it ends the browser's session.
      const ordered = [...docs].sort((a, b) => Number(a.url.endsWith('sign-out-everywhere')) - Number(b.url.endsWith('sign-out-everywhere')));
      const results: string[] = [];
      for (const role of ROLES) {
        const browser = browsers.get(role)!;
        const csrf = await browser.csrf('/dashboard');
        assert.ok(csrf, `${role} has a CSRF token`);
        for (const doc of ordered) {
          const key = `${doc.method} ${doc.url}`;
          const { url, form } = REQUESTS[key]!;
          const body = form === undefined ? undefined : Array.isArray(form) ? [['csrf', csrf] as [string, string], ...form] : { csrf, ...form };
          const answer = await browser.request(doc.method as 'GET' | 'POST', url, body);
          const permission = permissionOf(doc)!;
          const refused = answer.statusCode === 403 && answer.body.includes(ROLE_REFUSED_HEADING);
          if (!key.endsWith('sign-out-everywhere')) assert.doesNotMatch(String(answer.headers.location ?? ''), /sign-in/, `${role} ${key} is still signed in`);
          // 503: a refund with no facilitator configured here (its documented answer).
          assert.ok(answer.statusCode < 500 || answer.statusCode === 503, `${role} ${key}: ${answer.statusCode}`);
          if (can(role, permission)) assert.ok(!refused, `${role} may ${permission}: ${key}`);
          else {
            assert.equal(answer.statusCode, 403, `${role} may not ${permission}: ${key}`);
            assert.ok(refused, `${role} ${key}: the page names what the role lacks`);
            assert.ok(answer.body.includes(`(the <code>${permission}</code> permission)`), `${role} ${key} names ${permission}`);
          }
          results.push(`${role} ${key} ${refused ? 'refused' : 'allowed'}`);
        }
      }
      // The matrix is not trivially one-sided: every role is refused somewhere but the owner, and allowed somewhere.
      for (const role of ROLES) {
        assert.ok(
          results.some((line) => line.startsWith(`${role} `) && line.endsWith('allowed')),
          `${role} is allowed something`,
        );
        assert.equal(
          results.some((line) => line.startsWith(`${role} `) && line.endsWith('refused')),
          role !== 'owner' && role !== 'admin',
          `${role} is refused something`,
        );
      }
      // Owner, admin and developer made one key and one client each; the viewer none.
      const keysAfter = await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', merchantId).execute();
      assert.equal(keysAfter.length - keysBefore.length, 3);
    });

    test('the navigation shows Team and Activity only to the roles that may use them', async () => {
      for (const role of ROLES) {
        const browser = new Browser(service);
        const email = `nav-${role}-${engine}-${Date.now()}@shop.example`;
        await createUser(service.context.db, { merchantId, email, password: PASSWORD, role });
        await browser.signIn(email, PASSWORD);
        const page = (await browser.request('GET', '/dashboard')).body;
        assert.equal(page.includes('href="/dashboard/team"'), can(role, 'team'), `${role}: Team`);
        assert.equal(page.includes('href="/dashboard/activity"'), can(role, 'activity'), `${role}: Activity`);
        // The forms a role cannot use are not shown on the pages that hide them.
        for (const [path, action, permission] of [
          ['/dashboard/settings', '/dashboard/settings/wallet', 'wallet'],
          ['/dashboard/settings', '/dashboard/settings/business', 'business'],
          ['/dashboard/settings', '/dashboard/settings/accent', 'business'],
          ['/dashboard/get-paid', '/dashboard/get-paid/api-keys', 'keys'],
          ['/dashboard/links', '/dashboard/links', 'links'],
        ] as const) {
          const shown = (await browser.request('GET', path)).body.includes(`action="${action}"`);
          assert.equal(shown, can(role, permission), `${role}: the form of ${action} on ${path}`);
        }
      }
    });
  });
}
