// Account: change password (current + new twice; other browsers signed out), sign out everywhere;
// sign-in lands on the dashboard.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
      assert.equal(changed.headers.location, '/dashboard/account?changed=password');
      const afterChange = await browser.request('GET', changed.headers.location);
      assert.equal(afterChange.statusCode, 200, 'this browser stays signed in, with a new session');
      assert.match(afterChange.body, /Password changed/);
      assert.equal((await elsewhere.request('GET', '/dashboard')).statusCode, 303, 'the other browser is signed out');
      assert.equal((await new Browser(service, '198.51.100.10').signIn(email, password)).statusCode, 401);
      assert.equal((await new Browser(service, '198.51.100.11').signIn(email, NEW_PASSWORD)).statusCode, 303);
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
