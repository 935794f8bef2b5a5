// The merchant's page of authorized coding agents: listed for the signed-in merchant only, revoked
// with the session's CSRF token, never another merchant's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../accounts/users.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { Browser } from '../testing/page-browser.ts';
import { activeGrant, addConsent, type Grant } from './grants.ts';
import type { Scope } from './scopes.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describeOnEngine(`authorized coding agents page on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    let counter = 0;
    /** A merchant with a signed-in user in a browser. */
    async function signedInMerchant() {
      const { merchantId } = await service.merchant();
      const email = `agents${++counter}@shop.example`;
      const user = await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      const browser = new Browser(service);
      assert.equal((await browser.signIn(email, PASSWORD)).statusCode, 303);
      return { merchantId, userId: user.id, browser };
    }

    const consent = (owner: { merchantId: string; userId: string }, clientName: string, scopes: Scope[]): Promise<Grant> =>
      service.context.db
        .transaction()
        .execute((trx) =>
          addConsent(
            trx,
            { ...owner, clientId: `https://agents.example/${encodeURIComponent(clientName)}/client.json`, clientName, scopes },
            Date.parse('2026-11-20T09:30:00Z'),
          ),
        );

    test('signed out, the page sends the browser to sign in and back', async () => {
      const answer = await new Browser(service).request('GET', '/account/coding-agents');
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/sign-in?return_to=%2Faccount%2Fcoding-agents');
    });

    test('the account page links to the list; the list shows the grant: name, client id, scopes, dates, a revoke form', async () => {
      const owner = await signedInMerchant();
      const account = await owner.browser.request('GET', '/account');
      assert.match(account.body, /<a href="\/account\/coding-agents">/);
      const empty = await owner.browser.request('GET', '/account/coding-agents');
      assert.equal(empty.statusCode, 200);
      assert.match(empty.body, /No coding agent may use your account/);

      const grant = await consent(owner, 'Acme <Coding> Agent', ['settings:read', 'keys:read']);
      const list = await owner.browser.request('GET', '/account/coding-agents');
      assert.equal(list.statusCode, 200);
      assert.equal(list.headers['cache-control'], 'no-store');
      assert.match(String(list.headers['content-security-policy']), /script-src 'self'/);
      assert.ok(list.body.includes('Acme &lt;Coding&gt; Agent'));
      assert.ok(list.body.includes(grant.clientId));
      assert.ok(list.body.includes('<code>settings:read</code>') && list.body.includes('<code>keys:read</code>'));
      assert.ok(!list.body.includes('<code>orders:read</code>'));
      assert.match(list.body, /2026-11-20 09:30 UTC/);
      assert.match(list.body, /Never/);
      assert.ok(list.body.includes(`action="/account/coding-agents/${grant.id}/revoke"`));
    });

    test('revoking needs the session CSRF token (403 without or with a wrong one); with it the grant is gone from the list', async () => {
      const owner = await signedInMerchant();
      const grant = await consent(owner, 'Revocable Agent', ['orders:read']);
      const url = `/account/coding-agents/${grant.id}/revoke`;
      for (const form of [{}, { csrf: 'forged' }] as Record<string, string>[]) {
        const refused = await owner.browser.request('POST', url, form);
        assert.equal(refused.statusCode, 403);
      }
      assert.ok(await activeGrant(service.context.db, grant.id));

      const csrf = await owner.browser.csrf('/account');
      const revoked = await owner.browser.request('POST', url, { csrf });
      assert.equal(revoked.statusCode, 303);
      assert.equal(revoked.headers.location, '/account/coding-agents?revoked=1');
      assert.equal(await activeGrant(service.context.db, grant.id), undefined);
      const list = await owner.browser.request('GET', revoked.headers.location!);
      assert.match(list.body, /Access revoked/);
      assert.ok(!list.body.includes('Revocable Agent'));
      assert.equal((await owner.browser.request('POST', url, { csrf })).statusCode, 404);
    });

    test("another merchant's grant cannot be revoked, nor seen", async () => {
      const owner = await signedInMerchant();
      const other = await signedInMerchant();
      const grant = await consent(owner, 'Private Agent', ['settings:read']);
      const list = await other.browser.request('GET', '/account/coding-agents');
      assert.ok(!list.body.includes('Private Agent'));
      const csrf = await other.browser.csrf('/account');
      const refused = await other.browser.request('POST', `/account/coding-agents/${grant.id}/revoke`, { csrf });
      assert.equal(refused.statusCode, 404);
      assert.ok(await activeGrant(service.context.db, grant.id));
      // Signed out, even a form with some token is refused.
      assert.equal((await new Browser(service).request('POST', `/account/coding-agents/${grant.id}/revoke`, { csrf })).statusCode, 403);
    });
  });
}
