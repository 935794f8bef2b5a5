// Self-serve sign-up as a newcomer and an operator see it: off unless turned on (404, no link);
// on, nothing is made until the mailed link is used, and then the merchant and its owner exist
// and the browser is signed in, in test mode; a used or expired link and bad input change nothing;
// an address that already signs in gets the same answer, and its mail says so.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SIGN_UP_LIFETIME_MS } from '../../accounts/sign-ups.ts';
import { createUser, findUserByEmail } from '../../accounts/users.ts';
import { listMails } from '../../mail/outbox.ts';
import { createMerchant } from '../../merchants/merchants.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser } from '../../testing/page-browser.ts';
import { SIGN_UP_SENT } from './sign-up.route.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describeOnEngine(`sign-up turned off on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test('off by default: /sign-up and its link page are 404, posts too, and the sign-in page offers no sign-up', async () => {
      const browser = new Browser(service);
      assert.equal(service.context.config.signUp, false);
      const signIn = await browser.request('GET', '/sign-in');
      assert.equal(signIn.statusCode, 200);
      assert.doesNotMatch(signIn.body, /sign-up|Open an account/);
      assert.equal((await browser.request('GET', '/sign-up')).statusCode, 404);
      assert.equal((await browser.request('GET', '/sign-up/confirm?token=x')).statusCode, 404);
      const csrf = await browser.csrf('/sign-in');
      const posted = await browser.request('POST', '/sign-up', {
        csrf,
        name: 'Shop',
        email: `off-${engine}@shop.example`,
        password: PASSWORD,
        confirm: PASSWORD,
      });
      assert.equal(posted.statusCode, 404);
      // Without its form token, the one guard of every form post refuses it first, as everywhere.
      assert.equal((await browser.request('POST', '/sign-up', { name: 'Shop' })).statusCode, 403);
      assert.equal((await listMails(service.context.db, { limit: 50 })).filter((m) => m.data.kind === 'sign_up').length, 0);
    });
  });

  describeOnEngine(`sign-up turned on on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    before(async () => {
      service = await startTestService(engine, { TILL_SIGN_UP: 'true' }, { now: () => clock });
    });
    after(() => service?.stop());

    const counts = async () => {
      const db = service.context.db;
      const merchants = await db
        .selectFrom('merchants')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      const users = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return { merchants: Number(merchants.n), users: Number(users.n) };
    };

    async function signUp(browser: Browser, fields: Record<string, string>) {
      return browser.request('POST', '/sign-up', { csrf: await browser.csrf('/sign-up'), ...fields });
    }

    /** The path of the newest mail of `kind` to `email`, and the mail. */
    async function mailTo(email: string, kind: 'sign_up' | 'sign_up_existing') {
      const mails = await listMails(service.context.db, { limit: 100 });
      return mails.find((m) => m.recipient === email && m.data.kind === kind);
    }
    async function linkTo(email: string): Promise<string> {
      const mail = await mailTo(email, 'sign_up');
      assert.ok(mail && mail.data.kind === 'sign_up', `a sign-up link is mailed to ${email}`);
      const url = new URL(mail.data.link);
      return url.pathname + url.search;
    }

    async function open(link: string, ip = '203.0.113.20') {
      const browser = new Browser(service, ip);
      const page = await browser.request('GET', link);
      if (page.statusCode !== 200) return { browser, page, answer: page };
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const token = new URL(link, 'http://till.test').searchParams.get('token')!;
      const answer = await browser.request('POST', '/sign-up/confirm', { csrf, token });
      return { browser, page, answer };
    }

    test('a newcomer signs up, nothing exists until the mailed link is used, then they own a new merchant, signed in, in test mode; the link works once', async () => {
      const browser = new Browser(service, '203.0.113.10');
      const signInPage = await browser.request('GET', '/sign-in');
      assert.match(signInPage.body, /href="\/sign-up">Open an account/);
      const form = await browser.request('GET', '/sign-up');
      assert.equal(form.statusCode, 200);
      assert.match(form.body, /Business name/);
      const email = `new-${engine}-${Date.now()}@shop.example`;
      const before = await counts();
      const sent = await signUp(browser, { name: 'Fresh Beans', email: email.toUpperCase(), password: PASSWORD, confirm: PASSWORD });
      assert.equal(sent.statusCode, 200);
      assert.ok(sent.body.includes(SIGN_UP_SENT));
      assert.deepEqual(await counts(), before, 'nothing usable before the link');
      assert.equal(await findUserByEmail(service.context.db, email), undefined);
      const link = await linkTo(email);
      assert.match(link, /^\/sign-up\/confirm\?token=[A-Za-z0-9_-]{43}$/);

      // Opening the link shows what is about to be made; only the button makes it.
      const { browser: newcomer, page, answer } = await open(link);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /Open the account of Fresh Beans/);
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/dashboard');
      const user = await findUserByEmail(service.context.db, email);
      assert.ok(user);
      assert.equal(user.role, 'owner');
      const merchant = await service.context.db.selectFrom('merchants').select('name').where('id', '=', user.merchantId).executeTakeFirstOrThrow();
      assert.equal(merchant.name, 'Fresh Beans');
      assert.deepEqual(await counts(), { merchants: before.merchants + 1, users: before.users + 1 });
      const dashboard = await newcomer.request('GET', '/dashboard');
      assert.equal(dashboard.statusCode, 200);
      assert.match(dashboard.body, /Test mode/);
      assert.ok(dashboard.body.includes(email));
      // The owner may do what owners do: the team page opens.
      assert.equal((await newcomer.request('GET', '/dashboard/team')).statusCode, 200);
      // The password chosen at sign-up signs in.
      assert.equal((await new Browser(service, '203.0.113.11').signIn(email, PASSWORD)).statusCode, 303);
      // The opening is in the merchant's activity log.
      assert.match((await newcomer.request('GET', '/dashboard/activity.csv')).body, /account_opened/);

      // The same link again: refused, nothing more made.
      const again = await open(link, '203.0.113.21');
      assert.equal(again.page.statusCode, 404);
      assert.match(again.page.body, /already used/);
      const csrf = await again.browser.csrf('/sign-in');
      const token = new URL(link, 'http://till.test').searchParams.get('token')!;
      const replay = await again.browser.request('POST', '/sign-up/confirm', { csrf, token });
      assert.equal(replay.statusCode, 404);
      assert.deepEqual(await counts(), { merchants: before.merchants + 1, users: before.users + 1 });
    });

    test('an expired link and an unknown one are refused with a page saying why, and make nothing', async () => {
      const browser = new Browser(service, '203.0.113.30');
      const email = `late-${engine}-${Date.now()}@shop.example`;
      assert.equal((await signUp(browser, { name: 'Late Shop', email, password: PASSWORD, confirm: PASSWORD })).statusCode, 200);
      const link = await linkTo(email);
      const before = await counts();
      // The confirmation page is opened in time, the button pressed too late.
      const browserLate = new Browser(service, '203.0.113.31');
      const page = await browserLate.request('GET', link);
      assert.equal(page.statusCode, 200);
      clock += SIGN_UP_LIFETIME_MS;
      try {
        const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
        const token = new URL(link, 'http://till.test').searchParams.get('token')!;
        const late = await browserLate.request('POST', '/sign-up/confirm', { csrf, token });
        assert.equal(late.statusCode, 404);
        assert.match(late.body, /expired/);
        const opened = await open(link, '203.0.113.32');
        assert.equal(opened.page.statusCode, 404);
        assert.match(opened.page.body, /expired/);
      } finally {
        clock -= SIGN_UP_LIFETIME_MS;
      }
      const unknown = await open(`/sign-up/confirm?token=${'A'.repeat(43)}`);
      assert.equal(unknown.page.statusCode, 404);
      assert.match(unknown.page.body, /not a sign-up link/);
      assert.deepEqual(await counts(), before);
      assert.equal(await findUserByEmail(service.context.db, email), undefined);
    });

    test('an address that already signs in gets the same answer; its mail says it has an account, and no link makes a second', async () => {
      const merchant = await createMerchant(service.context.db, { name: 'Old Shop' });
      const email = `old-${engine}-${Date.now()}@shop.example`;
      await createUser(service.context.db, { merchantId: merchant.id, email, password: PASSWORD });
      const before = await counts();
      const browser = new Browser(service, '203.0.113.40');
      const answer = await signUp(browser, { name: 'Second Shop', email, password: 'another long password', confirm: 'another long password' });
      assert.equal(answer.statusCode, 200);
      assert.ok(answer.body.includes(SIGN_UP_SENT), 'the same answer as a new address');
      assert.equal(await mailTo(email, 'sign_up'), undefined, 'no link');
      const told = await mailTo(email, 'sign_up_existing');
      assert.ok(told, 'the user is told instead');
      assert.deepEqual(await counts(), before);
      assert.equal((await findUserByEmail(service.context.db, email))?.merchantId, merchant.id);
    });

    test('bad input is a 400 naming the field, keeping what was typed, and makes and mails nothing', async () => {
      const browser = new Browser(service, '203.0.113.50');
      const before = await counts();
      const mailsBefore = (await listMails(service.context.db, { limit: 500 })).length;
      const cases: [Record<string, string>, RegExp][] = [
        [{ name: 'Shop', email: `short-${engine}@shop.example`, password: 'short', confirm: 'short' }, /Password must be at least 12 characters/],
        [{ name: 'Shop', email: 'not-an-address', password: PASSWORD, confirm: PASSWORD }, /Email is not an email address/],
        [{ name: '   ', email: `noname-${engine}@shop.example`, password: PASSWORD, confirm: PASSWORD }, /Business name must not be empty/],
        [
          { name: 'x'.repeat(101), email: `long-${engine}@shop.example`, password: PASSWORD, confirm: PASSWORD },
          /Business name must be at most 100 characters/,
        ],
        [
          { name: 'Shop', email: `twice-${engine}@shop.example`, password: PASSWORD, confirm: 'something else entirely' },
          /Password again: the two passwords are not the same/,
        ],
      ];
      for (const [fields, problem] of cases) {
        const answer = await signUp(browser, fields);
        assert.equal(answer.statusCode, 400, JSON.stringify(fields));
        assert.match(answer.body, problem);
        assert.match(answer.body, /aria-invalid="true"/);
        if (fields.email === 'not-an-address') assert.match(answer.body, /value="not-an-address"/);
      }
      assert.deepEqual(await counts(), before);
      assert.equal((await listMails(service.context.db, { limit: 500 })).length, mailsBefore);
      const rows = await service.context.db.selectFrom('sign_ups').select('email').where('email', 'like', `%-${engine}@shop.example`).execute();
      assert.deepEqual(rows, []);
    });

    test('a form without its token is refused (403) and a fourth sign-up of one address in an hour waits (429)', async () => {
      const browser = new Browser(service, '203.0.113.60');
      const email = `many-${engine}-${Date.now()}@shop.example`;
      const forged = await browser.request('POST', '/sign-up', { csrf: 'forged', name: 'Shop', email, password: PASSWORD, confirm: PASSWORD });
      assert.equal(forged.statusCode, 403);
      for (let i = 0; i < 3; i++) assert.equal((await signUp(browser, { name: 'Shop', email, password: PASSWORD, confirm: PASSWORD })).statusCode, 200);
      const fourth = await signUp(browser, { name: 'Shop', email, password: PASSWORD, confirm: PASSWORD });
      assert.equal(fourth.statusCode, 429);
      assert.ok(fourth.headers['retry-after']);
    });
  });
}
