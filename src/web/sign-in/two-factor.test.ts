// Two-factor sign-in with an authenticator app, as a merchant's user meets it: set up on the account
// page (the key as a QR code and as text, confirmed by a code, recovery codes shown once), then asked
// for after the password. A code is taken once, a recovery code once, wrong codes are throttled as
// passwords are, and a merchant can require a second factor of every user.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { totpCode, totpStep } from '../../accounts/totp.ts';
import { createUser } from '../../accounts/users.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, csrfField } from '../../testing/page-browser.ts';

const PASSWORD = 'correct horse battery staple';
const TWO_FACTOR = '/dashboard/account/two-factor';

for (const { engine, skip } of engines) {
  describeOnEngine(`two-factor sign-in on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.UTC(2026, 10, 28, 12, 0, 10);
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
    });
    after(() => service?.stop());

    let users = 0;
    /** A user signed in (password only) in a browser of its own. */
    async function newUser(merchantId?: string) {
      const merchant = merchantId ?? (await service.merchant()).merchantId;
      const email = `twofactor${++users}-${engine}@shop.example`;
      const user = await createUser(service.context.db, { merchantId: merchant, email, password: PASSWORD });
      const browser = new Browser(service, `198.51.100.${users}`);
      assert.equal((await browser.signIn(email, PASSWORD)).statusCode, 303);
      return { merchantId: merchant, userId: user.id, email, browser };
    }

    /** Sets up the authenticator from the account page; its key (read from the page) and the recovery codes. */
    async function enrol(browser: Browser) {
      const csrf = await browser.csrf(TWO_FACTOR);
      const shown = await browser.request('POST', `${TWO_FACTOR}/totp`, { csrf });
      assert.equal(shown.statusCode, 200);
      assert.match(shown.body, /<svg role="img" aria-labelledby="totp-qr-caption"/, 'the QR code');
      const secret = /<code id="totp-secret" class="mono">([A-Z2-7 ]+)<\/code>/.exec(shown.body)![1]!.replaceAll(' ', '');
      const wrong = await browser.request('POST', `${TWO_FACTOR}/totp/confirm`, {
        csrf,
        code: String((Number(totpCode(secret, totpStep(clock))) + 1) % 1_000_000).padStart(6, '0'),
      });
      assert.equal(wrong.statusCode, 400);
      assert.match(wrong.body, /Code from the app is not right/);
      const on = await browser.request('POST', `${TWO_FACTOR}/totp/confirm`, { csrf, code: totpCode(secret, totpStep(clock)) });
      assert.equal(on.statusCode, 200);
      const recoveryCodes = [...on.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]!);
      assert.equal(recoveryCodes.length, 10);
      const again = await browser.request('GET', TWO_FACTOR);
      for (const code of recoveryCodes) assert.ok(!again.body.includes(code), 'recovery codes are shown once');
      assert.match(again.body, /10 unused recovery codes left/);
      return { secret, recoveryCodes };
    }

    const signedIn = async (browser: Browser) => (await browser.request('GET', '/dashboard')).statusCode === 200;
    const secondFactor = async (browser: Browser, code: string) =>
      browser.request('POST', '/sign-in/second-factor', { csrf: await browser.csrf('/sign-in/second-factor'), code, return_to: '/dashboard/orders' });

    test('set up, then sign-in asks for the code after the password; a wrong code and a replayed one are refused, the next one signs in', async () => {
      const user = await newUser();
      const { secret } = await enrol(user.browser);
      const other = new Browser(service, '203.0.113.9');
      const password = await other.signIn(user.email, PASSWORD, { return_to: '/dashboard/orders' });
      assert.equal(password.statusCode, 303);
      assert.equal(password.headers.location, '/sign-in/second-factor?return_to=%2Fdashboard%2Forders');
      assert.equal(await signedIn(other), false, 'past the password only: not signed in');
      const page = await other.request('GET', '/sign-in/second-factor?return_to=%2Fdashboard%2Forders');
      assert.match(page.body, /Confirm it is you/);

      const wrong = await secondFactor(other, '000000' === totpCode(secret, totpStep(clock)) ? '111111' : '000000');
      assert.equal(wrong.statusCode, 401);
      assert.match(wrong.body, /That code is not right/);
      assert.equal(await signedIn(other), false);

      // The code of this step was taken by the enrolment: typed again it is a replay.
      const replay = await secondFactor(other, totpCode(secret, totpStep(clock)));
      assert.equal(replay.statusCode, 401);
      assert.match(replay.body, /That code was used already/);
      assert.equal(await signedIn(other), false);

      clock += 30_000;
      const right = await secondFactor(other, totpCode(secret, totpStep(clock)));
      assert.equal(right.statusCode, 303);
      assert.equal(right.headers.location, '/dashboard/orders');
      assert.equal(await signedIn(other), true);

      // The same code from a third browser, within its 30 seconds: refused.
      const third = new Browser(service, '203.0.113.10');
      await third.signIn(user.email, PASSWORD);
      const stolen = await secondFactor(third, totpCode(secret, totpStep(clock)));
      assert.equal(stolen.statusCode, 401);
      assert.match(stolen.body, /used already/);
      assert.equal(await signedIn(third), false);
    });

    test('a recovery code signs in once; used again it is refused; the count left goes down', async () => {
      const user = await newUser();
      const { recoveryCodes } = await enrol(user.browser);
      const first = new Browser(service, '203.0.113.20');
      await first.signIn(user.email, PASSWORD);
      assert.equal((await secondFactor(first, recoveryCodes[0]!.toUpperCase())).statusCode, 303, 'any case');
      assert.equal(await signedIn(first), true);
      const second = new Browser(service, '203.0.113.21');
      await second.signIn(user.email, PASSWORD);
      const used = await secondFactor(second, recoveryCodes[0]!);
      assert.equal(used.statusCode, 401);
      assert.match(used.body, /That code was used already/);
      assert.equal(await signedIn(second), false);
      assert.match((await first.request('GET', TWO_FACTOR)).body, /9 unused recovery codes left/);
    });

    test('second-factor guesses are throttled as sign-in attempts are: locked after ten, even for the right code', async () => {
      const user = await newUser();
      const { secret } = await enrol(user.browser);
      clock += 30_000;
      const browser = new Browser(service, '203.0.113.30');
      await browser.signIn(user.email, PASSWORD);
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        statuses.push((await secondFactor(browser, '999999')).statusCode);
        clock += 31_000; // past each wait, so every guess is counted
      }
      assert.ok(
        statuses.every((status) => status === 401),
        statuses.join(),
      );
      const locked = await secondFactor(browser, totpCode(secret, totpStep(clock)));
      assert.equal(locked.statusCode, 429);
      assert.match(locked.body, /Too many attempts\. Try again in 15 minutes/);
      assert.equal(await signedIn(browser), false);
      clock += 15 * 60_000;
      assert.equal((await secondFactor(browser, totpCode(secret, totpStep(clock)))).statusCode, 303);
    });

    test('a merchant that requires a second factor sends a user without one to set it up, and only then opens the dashboard', async () => {
      const owner = await newUser();
      const { secret } = await enrol(owner.browser);
      clock += 30_000;
      const csrf = csrfField((await owner.browser.request('GET', TWO_FACTOR)).body);
      // The owner's second factor is fresh from the enrolment: no code asked.
      const required = await owner.browser.request('POST', `${TWO_FACTOR}/require`, { csrf, required: 'yes' });
      assert.equal(required.statusCode, 303);
      assert.equal(required.headers.location, `${TWO_FACTOR}?done=required`);

      const member = await newUser(owner.merchantId);
      const keys = () => service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', owner.merchantId).execute();
      const keysBefore = (await keys()).length;
      const dashboard = await member.browser.request('GET', '/dashboard/get-paid');
      assert.equal(dashboard.statusCode, 303);
      assert.equal(dashboard.headers.location, TWO_FACTOR);
      const post = await member.browser.request('POST', '/dashboard/get-paid/api-keys', {
        csrf: csrfField((await member.browser.request('GET', TWO_FACTOR)).body),
      });
      assert.equal(post.statusCode, 303, 'a form post too');
      assert.equal((await keys()).length, keysBefore, 'no key made');
      assert.match((await member.browser.request('GET', TWO_FACTOR)).body, /Your merchant requires a second factor/);
      const fresh = new Browser(service, '203.0.113.40');
      const signIn = await fresh.signIn(member.email, PASSWORD);
      assert.equal(signIn.headers.location, TWO_FACTOR, 'sent to enrol after the password');
      await enrol(member.browser);
      assert.equal((await member.browser.request('GET', '/dashboard/get-paid')).statusCode, 200);
      assert.ok(secret);
    });

    test('step-up: minutes after the second factor, the payout wallet and a new API key need a fresh code; a wrong or replayed one changes nothing', async () => {
      const user = await newUser();
      const { secret } = await enrol(user.browser);
      const wallet = async () =>
        (await service.context.db.selectFrom('merchants').select('test_wallet_address').where('id', '=', user.merchantId).executeTakeFirstOrThrow())
          .test_wallet_address;
      const keys = async () => (await service.context.db.selectFrom('api_keys').select('id').where('merchant_id', '=', user.merchantId).execute()).length;
      const changeWallet = async (code?: string) => {
        const csrf = csrfField((await user.browser.request('GET', '/dashboard/settings')).body);
        return user.browser.request('POST', '/dashboard/settings/wallet', {
          csrf,
          mode: 'test',
          wallet: '0x2222222222222222222222222222222222222222',
          confirm: '2222',
          password: PASSWORD,
          ...(code === undefined ? {} : { second_factor_code: code }),
        });
      };
      // Fresh from the enrolment: no code asked.
      assert.doesNotMatch((await user.browser.request('GET', '/dashboard/settings')).body, /name="second_factor_code"/);
      clock += 6 * 60_000;
      assert.match((await user.browser.request('GET', '/dashboard/settings')).body, /name="second_factor_code"/, 'the form asks for it');
      const walletBefore = await wallet();
      const missing = await changeWallet();
      assert.equal(missing.statusCode, 400);
      assert.match(missing.body, /Two-factor code must be given/);
      const wrong = await changeWallet('000000' === totpCode(secret, totpStep(clock)) ? '111111' : '000000');
      assert.equal(wrong.statusCode, 400);
      assert.match(wrong.body, /Two-factor code is not right/);
      assert.equal(await wallet(), walletBefore, 'nothing changed');
      const right = await changeWallet(totpCode(secret, totpStep(clock)));
      assert.equal(right.statusCode, 303, right.body.slice(0, 300));
      assert.equal(await wallet(), '0x2222222222222222222222222222222222222222');

      clock += 6 * 60_000;
      const keysBefore = await keys();
      const csrf = csrfField((await user.browser.request('GET', '/dashboard/get-paid')).body);
      const replayed = await user.browser.request('POST', '/dashboard/get-paid/api-keys', {
        csrf,
        access: 'full',
        second_factor_code: totpCode(secret, totpStep(clock - 6 * 60_000)),
      });
      assert.equal(replayed.statusCode, 400);
      assert.match(replayed.body, /Two-factor code (is not right|was used already)/);
      assert.equal(await keys(), keysBefore);
      const made = await user.browser.request('POST', '/dashboard/get-paid/api-keys', {
        csrf,
        access: 'restricted',
        scopes: 'sessions:write',
        second_factor_code: totpCode(secret, totpStep(clock)),
      });
      assert.equal(made.statusCode, 200);
      assert.match(made.body, /Access: <code>sessions:write<\/code>/);
      assert.equal(await keys(), keysBefore + 1);
    });

    test("step-up: a role change on the Team page needs a fresh second factor of a user who has one; without it the member's role stays", async () => {
      const owner = await newUser();
      const { secret } = await enrol(owner.browser);
      const member = await createUser(service.context.db, {
        merchantId: owner.merchantId,
        email: `member-${engine}@shop.example`,
        password: PASSWORD,
        role: 'viewer',
      });
      const roleOf = async () => (await service.context.db.selectFrom('users').select('role').where('id', '=', member.id).executeTakeFirstOrThrow()).role;
      const changeRole = async (code?: string) =>
        owner.browser.request('POST', `/dashboard/team/members/${member.id}/role`, {
          csrf: csrfField((await owner.browser.request('GET', '/dashboard/team')).body),
          role: 'developer',
          ...(code === undefined ? {} : { second_factor_code: code }),
        });
      clock += 6 * 60_000;
      assert.match((await owner.browser.request('GET', '/dashboard/team')).body, /name="second_factor_code"/, 'the role form asks for it');
      const missing = await changeRole();
      assert.equal(missing.statusCode, 400);
      assert.match(missing.body, /second factor must be given/);
      const wrong = await changeRole('000000' === totpCode(secret, totpStep(clock)) ? '111111' : '000000');
      assert.equal(wrong.statusCode, 400);
      assert.equal(await roleOf(), 'viewer', 'nothing changed');
      const right = await changeRole(totpCode(secret, totpStep(clock)));
      assert.equal(right.statusCode, 303, right.body.slice(0, 300));
      assert.equal(await roleOf(), 'developer');
    });
  });
}
