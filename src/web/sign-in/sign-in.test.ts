import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EMAIL_POLICY, IP_POLICY, purgeForgottenFailures } from '../../accounts/throttle.ts';
import { purgeEndedUserSessions } from '../../accounts/user-sessions.ts';
import { createUser, passwordHashCost, setPassword } from '../../accounts/users.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser } from '../../testing/page-browser.ts';
import { WRONG_CREDENTIALS } from './sign-in.route.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describeOnEngine(`merchant sign-in on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    let merchantId: string;
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
      ({ merchantId } = await service.merchant());
    });
    after(() => service?.stop());

    let counter = 0;
    const newUser = async () => {
      const email = `user${++counter}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      return email;
    };

    test('a user is stored with an Argon2id hash of the password, never the password; emails are one per user, any case', async () => {
      const email = await newUser();
      const row = await service.context.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
      const { memoryCost, timeCost, parallelism } = passwordHashCost(); // 19456, 2, 1 unless a quick test run lowered it
      assert.ok(row.password_hash.startsWith(`$argon2id$v=19$m=${memoryCost},t=${timeCost},p=${parallelism}$`), row.password_hash);
      assert.ok(!row.password_hash.includes(PASSWORD));
      await assert.rejects(createUser(service.context.db, { merchantId, email: email.toUpperCase(), password: PASSWORD }), /already exists/);
      await assert.rejects(createUser(service.context.db, { merchantId, email: 'x@shop.example', password: 'short' }), /at least 12/);
    });

    test('a return_to given twice or in brackets is no path: the page shows, going on to the dashboard', async () => {
      for (const query of ['return_to=/orders&return_to=/links', 'return_to[]=/orders', 'return_to[a]=/orders']) {
        const page = await service.app.inject({ method: 'GET', url: `/sign-in?${query}` });
        assert.equal(page.statusCode, 200, query);
        assert.match(page.body, /name="return_to" value="\/dashboard"/);
      }
    });

    test('the sign-in page sets an HttpOnly, SameSite=Lax CSRF cookie (not Secure on http) that the form must repeat', async () => {
      const email = await newUser();
      const browser = new Browser(service);
      const page = await browser.request('GET', '/sign-in');
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(String(page.headers['set-cookie']), /^till_csrf=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
      assert.match(String(page.headers['content-security-policy']), /form-action 'self'/);
      // It names the product, and says the money is fake in the sandbox (this service's mode).
      assert.match(page.body, /<h1>Sign in to Till<\/h1>/);
      assert.match(page.body, /<strong>Sandbox:<\/strong> the money here is fake\./);
      // Without the field, with a wrong one, or without the cookie: refused, and the password is not even checked.
      for (const csrf of [undefined, 'forged']) {
        const refused = await browser.request('POST', '/sign-in', { email, password: PASSWORD, ...(csrf ? { csrf } : {}) });
        assert.equal(refused.statusCode, 403);
      }
      const token = browser.cookies.get('till_csrf')!;
      const noCookie = await new Browser(service).request('POST', '/sign-in', { csrf: token, email, password: PASSWORD });
      assert.equal(noCookie.statusCode, 403);
      assert.equal(browser.cookies.has('till_session'), false);
    });

    test('signing in sets an HttpOnly, SameSite=Lax session cookie, goes on to a local return path only, and the account page knows the user', async () => {
      const email = await newUser();
      const browser = new Browser(service);
      const signedIn = await browser.signIn(email.toUpperCase(), PASSWORD, { return_to: '/account?tab=1' });
      assert.equal(signedIn.statusCode, 303);
      assert.equal(signedIn.headers.location, '/account?tab=1');
      const cookies = [signedIn.headers['set-cookie']].flat().join('\n');
      assert.match(cookies, /till_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200/);
      const account = await browser.request('GET', '/account');
      assert.equal(account.statusCode, 200);
      assert.ok(account.body.includes(email) && account.body.includes(merchantId));
      for (const returnTo of ['//evil.example/x', 'https://evil.example', '/\\evil.example']) {
        const other = new Browser(service);
        const answer = await other.signIn(email, PASSWORD, { return_to: returnTo });
        assert.equal(answer.headers.location, '/dashboard', returnTo);
      }
      const signedOut = await new Browser(service).request('GET', '/account');
      assert.equal(signedOut.statusCode, 303);
      assert.equal(signedOut.headers.location, '/sign-in?return_to=%2Faccount');
    });

    test('the session is rotated at sign-in: the cookie the browser had before no longer works', async () => {
      const email = await newUser();
      const browser = new Browser(service);
      await browser.signIn(email, PASSWORD);
      const first = browser.cookies.get('till_session')!;
      // Signed in, the sign-in page sends the browser on; its form is fetched as if signed out, then posted with the session cookie.
      assert.equal((await browser.request('GET', '/sign-in')).statusCode, 303);
      browser.cookies.delete('till_session');
      const csrf = await browser.csrf();
      browser.cookies.set('till_session', first);
      assert.equal((await browser.request('POST', '/sign-in', { csrf, email, password: PASSWORD })).statusCode, 303);
      const second = browser.cookies.get('till_session')!;
      assert.notEqual(first, second);
      const stale = new Browser(service);
      stale.cookies.set('till_session', first);
      assert.equal((await stale.request('GET', '/account')).statusCode, 303);
      assert.equal((await browser.request('GET', '/account')).statusCode, 200);
    });

    test('sign-out needs the session CSRF token, ends the session and clears the cookie', async () => {
      const email = await newUser();
      const browser = new Browser(service);
      await browser.signIn(email, PASSWORD);
      const token = browser.cookies.get('till_session')!;
      assert.equal((await browser.request('POST', '/sign-out', { csrf: 'forged' })).statusCode, 403);
      assert.equal((await browser.request('GET', '/account')).statusCode, 200);
      const csrf = /name="csrf" value="([^"]+)"/.exec((await browser.request('GET', '/account')).body)![1]!;
      const out = await browser.request('POST', '/sign-out', { csrf });
      assert.equal(out.statusCode, 303);
      assert.match(String(out.headers['set-cookie']), /till_session=; .*Max-Age=0/);
      const replay = new Browser(service);
      replay.cookies.set('till_session', token);
      assert.equal((await replay.request('GET', '/account')).statusCode, 303);
    });

    test('a session ends after the idle timeout, and after the absolute timeout however active it is', async () => {
      const email = await newUser();
      const idle = new Browser(service);
      await idle.signIn(email, PASSWORD);
      clock += (service.config.signInIdleSeconds - 60) * 1000;
      assert.equal((await idle.request('GET', '/account')).statusCode, 200, 'activity keeps it alive');
      clock += service.config.signInIdleSeconds * 1000;
      assert.equal((await idle.request('GET', '/account')).statusCode, 303, 'idle too long');

      const busy = new Browser(service);
      await busy.signIn(email, PASSWORD);
      const end = clock + service.config.signInMaxSeconds * 1000;
      while (clock + 10 * 60_000 < end) {
        clock += 10 * 60_000;
        assert.equal((await busy.request('GET', '/account')).statusCode, 200);
      }
      clock = end;
      assert.equal((await busy.request('GET', '/account')).statusCode, 303, 'past the absolute timeout');
    });

    test('an unknown email and a wrong password get the same answer', async () => {
      const email = await newUser();
      const browser = new Browser(service, '203.0.113.50');
      const wrong = await browser.signIn(email, 'not the password at all');
      const unknown = await browser.signIn('nobody@shop.example', 'not the password at all');
      assert.equal(wrong.statusCode, 401);
      assert.equal(unknown.statusCode, 401);
      assert.ok(wrong.body.includes(WRONG_CREDENTIALS));
      assert.equal(wrong.body.replace(email, 'EMAIL'), unknown.body.replace('nobody@shop.example', 'EMAIL'));
    });

    test('repeated failures slow an email from one IP down, then lock it, known or not, even against the right password; the lock ends', async () => {
      const known = await newUser();
      for (const email of [known, 'ghost@shop.example']) {
        const browser = new Browser(service, `203.0.113.${++counter}`);
        const answers: number[] = [];
        for (let i = 1; i <= EMAIL_POLICY.freeFailures + 1; i++) answers.push((await browser.signIn(email, 'wrong password!')).statusCode);
        assert.deepEqual(answers, [401, 401, 401, 401]);
        // Slowed down: the next attempt at once is refused without being checked.
        const slowed = await browser.signIn(email, PASSWORD);
        assert.equal(slowed.statusCode, 429);
        assert.equal(slowed.headers['retry-after'], '1');
        assert.match(slowed.body, /Too many attempts/);
        for (let i = EMAIL_POLICY.freeFailures + 2; i <= EMAIL_POLICY.lockAfter; i++) {
          clock += EMAIL_POLICY.slowdownMaxMs;
          assert.equal((await browser.signIn(email, 'wrong password!')).statusCode, 401);
        }
        clock += EMAIL_POLICY.slowdownMaxMs;
        const locked = await browser.signIn(email, PASSWORD);
        assert.equal(locked.statusCode, 429, 'locked, even with the right password');
        assert.ok(Number(locked.headers['retry-after']) > 800);
        // The lock is this email from this IP: the merchant elsewhere is not locked out (docs/auth.md).
        if (email === known) assert.equal((await new Browser(service, '192.0.2.99').signIn(email, PASSWORD)).statusCode, 303);
        clock += EMAIL_POLICY.lockMs;
      }
      const after = await new Browser(service, '192.0.2.98').signIn(known, PASSWORD);
      assert.equal(after.statusCode, 303, 'the lock ends');
    });

    test('repeated failures from one IP over many emails lock that IP, not others', async () => {
      const email = await newUser();
      const attacker = new Browser(service, '203.0.113.200');
      let status = 0;
      for (let i = 1; i <= IP_POLICY.lockAfter; i++) {
        clock += IP_POLICY.slowdownMaxMs;
        status = (await attacker.signIn(`spray${i}@shop.example`, 'wrong password!')).statusCode;
        assert.equal(status, 401, `attempt ${i}`);
      }
      clock += IP_POLICY.slowdownMaxMs;
      assert.equal((await attacker.signIn(email, PASSWORD)).statusCode, 429);
      assert.equal((await new Browser(service, '203.0.113.201').signIn(email, PASSWORD)).statusCode, 303);
    });

    test('the sweep removes ended sessions and forgotten failure counts, and keeps live ones', async () => {
      const email = await newUser();
      const ended = new Browser(service, '192.0.2.40');
      await ended.signIn(email, PASSWORD);
      await new Browser(service, '192.0.2.41').signIn(email, 'wrong password!');
      clock += service.config.signInMaxSeconds * 1000 + EMAIL_POLICY.forgetAfterMs;
      const live = new Browser(service, '192.0.2.42');
      await live.signIn(email, PASSWORD);
      await new Browser(service, '192.0.2.43').signIn('recent@shop.example', 'wrong password!');
      const { db } = service.context;
      assert.ok((await purgeEndedUserSessions(db, clock)) >= 1);
      assert.ok((await purgeForgottenFailures(db, clock)) >= 2);
      const subjects = (await db.selectFrom('sign_in_throttle').select('subject').execute()).map((row) => row.subject);
      assert.ok(
        subjects.includes('email:recent@shop.example') && subjects.includes('email-ip:recent@shop.example|192.0.2.43') && subjects.includes('ip:192.0.2.43'),
      );
      assert.ok(!subjects.includes('ip:192.0.2.41'));
      assert.equal((await ended.request('GET', '/account')).statusCode, 303);
      assert.equal((await live.request('GET', '/account')).statusCode, 200);
    });

    test('a password reset takes effect at once; bad input gets an answer, never a 500', async () => {
      const email = await newUser();
      await setPassword(service.context.db, email, 'a brand new password');
      assert.equal((await new Browser(service, '192.0.2.10').signIn(email, 'a brand new password')).statusCode, 303);
      const browser = new Browser(service, '192.0.2.11');
      const csrf = await browser.csrf();
      const cookie = [...browser.cookies].map(([n, v]) => `${n}=${v}`).join('; ');
      const cases = [
        { payload: '{"email":"a"}', type: 'application/json' },
        { payload: '', type: 'application/x-www-form-urlencoded' },
        { payload: `csrf=${csrf}&email=${'x'.repeat(5000)}&password=${'p'.repeat(5000)}`, type: 'application/x-www-form-urlencoded' },
        { payload: `csrf=${csrf}&csrf=other&email[]=a&password=%E0%A4%A`, type: 'application/x-www-form-urlencoded' },
        { payload: 'a=b', type: 'text/plain' },
        { payload: 'x'.repeat(100_000), type: 'application/x-www-form-urlencoded' },
      ];
      for (const { payload, type } of cases) {
        const answer = await service.app.inject({ method: 'POST', url: '/sign-in', payload, headers: { 'content-type': type, cookie } });
        assert.ok(answer.statusCode >= 400 && answer.statusCode < 500, `${type} ${payload.slice(0, 30)} → ${answer.statusCode}`);
      }
      const garbled = await service.app.inject({ method: 'GET', url: '/account', headers: { cookie: 'till_session=%E0%A4%A; till_session=x' } });
      assert.equal(garbled.statusCode, 303);
    });
  });
}

describeOnEngine('sign-in cookies over https', false, () => {
  let service: TestService;
  before(async () => {
    service = await startTestService('sqlite', { TILL_BASE_URL: 'https://till.example' });
  });
  after(() => service?.stop());

  test('are Secure and __Host- prefixed', async () => {
    const { merchantId } = await service.merchant();
    await createUser(service.context.db, { merchantId, email: 'secure@shop.example', password: PASSWORD });
    const page = await service.app.inject({ method: 'GET', url: '/sign-in' });
    assert.match(String(page.headers['set-cookie']), /^__Host-till_csrf=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const signedIn = await service.app.inject({
      method: 'POST',
      url: '/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-till_csrf=${csrf}` },
      payload: new URLSearchParams({ csrf, email: 'secure@shop.example', password: PASSWORD }).toString(),
    });
    assert.equal(signedIn.statusCode, 303);
    assert.match([signedIn.headers['set-cookie']].flat().join('\n'), /__Host-till_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure/);
  });
});

describeOnEngine('the sign-in page in live mode', false, () => {
  let service: TestService;
  before(async () => {
    service = await startTestService('sqlite', { TILL_FACILITATOR_URL: 'http://127.0.0.1:9' });
  });
  after(() => service?.stop());

  test('names the product and shows no sandbox banner', async () => {
    assert.equal(service.config.mode, 'live');
    const page = await service.app.inject({ method: 'GET', url: '/sign-in' });
    assert.match(page.body, /<h1>Sign in to Till<\/h1>/);
    assert.doesNotMatch(page.body, /Sandbox/);
  });
});
