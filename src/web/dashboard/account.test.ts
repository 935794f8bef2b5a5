// Account: change password (current + new twice; other browsers signed out), sign out everywhere;
// sign-in lands on the dashboard.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiKey, listApiKeys } from '../../merchants/api-keys.ts';
import { authorizedAgent, callMcpTool } from '../../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, csrfField, postFromOrigin, signedInMerchant } from '../../testing/page-browser.ts';

const NEW_PASSWORD = 'a brand new passphrase here';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's account page on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test('sign-in without a return path lands on the dashboard; the old account page links to it', async () => {
      const { browser } = await signedInMerchant(service);
      const account = await browser.request('GET', '/account');
      assert.match(account.body, /<a href="\/dashboard">Open the dashboard<\/a>/);
      const page = await browser.request('GET', '/dashboard/account');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /aria-current="page">Account</);
    });

    test('changing the password: refusals name their field; then the new one works, the old does not, other browsers are signed out', async () => {
      const { browser, email, password } = await signedInMerchant(service);
      const elsewhere = new Browser(service, '198.51.100.8');
      assert.equal((await elsewhere.signIn(email, password)).statusCode, 303);
      const csrf = await browser.csrf('/dashboard/account');
      const cases: [Record<string, string>, string, string][] = [
        [{ new_password: 'short', new_password_again: 'short' }, 'New password must be at least 12 characters', 'field-new-password'],
        [{ new_password_again: `${NEW_PASSWORD}!` }, 'New password again does not match', 'field-new-password-again'],
        [{ current_password: 'not my password at all' }, 'Current password is not right', 'field-current-password'],
        [{ current_password: '' }, 'Current password must be given', 'field-current-password'],
      ];
      for (const [change, problem, id] of cases) {
        const answer = await browser.request('POST', '/dashboard/account/password', {
          csrf,
          current_password: password,
          new_password: NEW_PASSWORD,
          new_password_again: NEW_PASSWORD,
          ...change,
        });
        assert.equal(answer.statusCode, 400, problem);
        assert.ok(answer.body.includes(`<p role="alert" class="problem">${problem}`), problem);
        assert.match(answer.body, new RegExp(`id="${id}"[^>]*aria-invalid="true"`));
        assert.ok(!answer.body.includes(NEW_PASSWORD) && !answer.body.includes(password), 'passwords never come back');
      }
      assert.equal((await new Browser(service, '198.51.100.9').signIn(email, password)).statusCode, 303, 'still the old password');

      const changed = await browser.request('POST', '/dashboard/account/password', {
        csrf,
        current_password: password,
        new_password: NEW_PASSWORD,
        new_password_again: NEW_PASSWORD,
      });
      assert.equal(changed.statusCode, 303);
      assert.match(String(changed.headers.location), /^\/dashboard\/account\?changed=password&agents_revoked=0&since=\d+$/);
      const afterChange = await browser.request('GET', String(changed.headers.location));
      assert.equal(afterChange.statusCode, 200, 'this browser stays signed in, with a new session');
      assert.match(afterChange.body, /Password changed/);
      assert.equal((await elsewhere.request('GET', '/dashboard')).statusCode, 303, 'the other browser is signed out');
      assert.equal((await new Browser(service, '198.51.100.10').signIn(email, password)).statusCode, 401);
      assert.equal((await new Browser(service, '198.51.100.11').signIn(email, NEW_PASSWORD)).statusCode, 303);
    });

    test('a password change revokes every coding agent when ticked (the default), and lists the keys agents made with the old password, each revocable', async () => {
      const { browser, password, merchantId } = await signedInMerchant(service);
      const intruders = await authorizedAgent(service.context, merchantId, ['keys:write', 'settings:read']);
      const made = await callMcpTool(service.app, intruders.accessToken, 'create_api_key');
      assert.equal(made.status, 200);
      const agentKey = made.body.result.structuredContent as { keyId: string; apiKey: string; masked: string };
      const ownKey = await createApiKey(service.context.db, merchantId, 'test');
      // A stranger's agent key is never listed here.
      const stranger = await signedInMerchant(service);
      const strangersAgent = await authorizedAgent(service.context, stranger.merchantId, ['keys:write']);
      const strangersKey = (await callMcpTool(service.app, strangersAgent.accessToken, 'create_api_key')).body.result.structuredContent as { masked: string };

      const before = await browser.request('GET', '/dashboard/account');
      assert.match(
        before.body,
        /<input type="checkbox" id="revoke-agents" name="revoke_agents" value="yes" checked> <label for="revoke-agents">Also revoke every coding agent's access \(1 authorized\)<\/label>/,
      );
      const changed = await browser.request('POST', '/dashboard/account/password', {
        csrf: csrfField(before.body),
        current_password: password,
        new_password: NEW_PASSWORD,
        new_password_again: NEW_PASSWORD,
        revoke_agents: 'yes',
      });
      assert.equal(changed.statusCode, 303);
      const page = await browser.request('GET', String(changed.headers.location));
      assert.match(page.body, /Password changed. Your other browsers are signed out, and 1 coding agent lost its access./);
      assert.doesNotMatch(page.body, /id="revoke-agents"/, 'no agent left to revoke');
      assert.match(page.body, /API keys made by coding agents/);
      assert.ok(page.body.includes(agentKey.masked) && page.body.includes(intruders.clientId), 'the agent key, and the agent that made it');
      assert.ok(!page.body.includes(`…${ownKey.lastFour}`), 'a key made on the dashboard or by the operator is not listed');
      assert.ok(!page.body.includes(strangersKey.masked), "another merchant's keys are not listed");
      assert.ok(!page.body.includes(agentKey.apiKey), 'the key itself is never shown again');

      // The agent's token is refused at its next call; the key it made still works until revoked.
      const refused = await callMcpTool(service.app, intruders.accessToken, 'get_payment_settings');
      assert.equal(refused.status, 401);
      const e1 = (apiKey: string) =>
        service.app.inject({
          method: 'POST',
          url: '/api/checkout/v2/payment_session',
          headers: { 'x-sc-apikey': apiKey },
          payload: { amount: 1, currency: 'USD' },
        });
      assert.equal((await e1(agentKey.apiKey)).statusCode, 201);
      const action = new RegExp(`action="(/dashboard/account/api-keys/${agentKey.keyId}/revoke\\?since=\\d+)"`).exec(page.body)![1]!;
      const revoked = await browser.request('POST', action, { csrf: csrfField(page.body) });
      assert.equal(revoked.statusCode, 303);
      const listed = await browser.request('GET', String(revoked.headers.location));
      assert.match(listed.body, /API key revoked/);
      assert.ok(!listed.body.includes(agentKey.masked), 'a revoked key leaves the list');
      assert.equal((await e1(agentKey.apiKey)).statusCode, 401);
      assert.equal((await e1(ownKey.apiKey)).statusCode, 201, 'the merchant’s own key is untouched');
      // Another merchant's key cannot be revoked from here.
      const strangersKeyId = (await listApiKeys(service.context.db, stranger.merchantId)).keys.find((key) => key.masked === strangersKey.masked)!.keyId;
      const notMine = await browser.request('POST', `/dashboard/account/api-keys/${strangersKeyId}/revoke`, { csrf: csrfField(page.body) });
      assert.equal(notMine.statusCode, 404);
      assert.match(notMine.body, /No such API key: it was revoked already, or it is not one of yours\./);
      assert.ok((await listApiKeys(service.context.db, stranger.merchantId)).keys.some((key) => key.keyId === strangersKeyId));
    });

    test('a password change with the box unticked leaves the coding agents their access', async () => {
      const { browser, password, merchantId } = await signedInMerchant(service);
      const agent = await authorizedAgent(service.context, merchantId, ['settings:read']);
      const csrf = await browser.csrf('/dashboard/account');
      const changed = await browser.request('POST', '/dashboard/account/password', {
        csrf,
        current_password: password,
        new_password: NEW_PASSWORD,
        new_password_again: NEW_PASSWORD,
      });
      assert.equal(changed.statusCode, 303);
      assert.match((await browser.request('GET', String(changed.headers.location))).body, /Password changed. Your other browsers are signed out.</);
      assert.equal((await callMcpTool(service.app, agent.accessToken, 'get_payment_settings')).status, 200);
    });

    test('sign out everywhere ends every session of the user, and only of that user', async () => {
      const { browser, email, password } = await signedInMerchant(service);
      const elsewhere = new Browser(service, '198.51.100.12');
      await elsewhere.signIn(email, password);
      const stranger = await signedInMerchant(service);
      const page = await browser.request('GET', '/dashboard/account');
      const answer = await browser.request('POST', '/dashboard/account/sign-out-everywhere', { csrf: csrfField(page.body) });
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/sign-in');
      assert.equal((await browser.request('GET', '/dashboard')).statusCode, 303);
      assert.equal((await elsewhere.request('GET', '/dashboard')).statusCode, 303);
      assert.equal((await stranger.browser.request('GET', '/dashboard')).statusCode, 200);
    });

    test('account posts without the CSRF token, or from another origin, are refused and change nothing', async () => {
      const { browser, email, password } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/account');
      const form = { current_password: password, new_password: NEW_PASSWORD, new_password_again: NEW_PASSWORD };
      assert.equal((await browser.request('POST', '/dashboard/account/password', form)).statusCode, 403);
      assert.equal((await browser.request('POST', '/dashboard/account/sign-out-everywhere', {})).statusCode, 403);
      for (const url of ['/dashboard/account/password', '/dashboard/account/sign-out-everywhere']) {
        const answer = await postFromOrigin(service, browser, url, { ...form, csrf });
        assert.equal(answer.statusCode, 403, url);
      }
      assert.equal((await browser.request('GET', '/dashboard')).statusCode, 200, 'still signed in');
      assert.equal((await new Browser(service, '198.51.100.13').signIn(email, password)).statusCode, 303, 'password unchanged');
    });
  });
}
