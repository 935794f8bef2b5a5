import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';
import { ACCOUNT_POLICY, EMAIL_POLICY, IP_POLICY } from './throttle.ts';
import { createUser } from './users.ts';

const PASSWORD = 'correct horse battery staple';

/** A browser speaking real HTTP to the service, from `ip`: the address its one proxy (TILL_TRUST_PROXY=1) appends to X-Forwarded-For. */
class HttpBrowser {
  cookies = new Map<string, string>();
  private baseUrl: string;
  private ip: string;
  /** What the client itself writes in X-Forwarded-For, before the proxy appends its address. */
  claimed = '';
  constructor(baseUrl: string, ip: string) {
    this.baseUrl = baseUrl;
    this.ip = ip;
  }
  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string>) {
    const response = await fetch(new URL(path, this.baseUrl), {
      method,
      redirect: 'manual',
      headers: {
        'x-forwarded-for': this.claimed ? `${this.claimed}, ${this.ip}` : this.ip,
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (/Max-Age=0/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: response.status, headers: response.headers, body: await response.text() };
  }
  async csrf(path = '/sign-in') {
    return /name="csrf" value="([^"]+)"/.exec((await this.request('GET', path)).body)?.[1] ?? '';
  }
  async signIn(email: string, password: string) {
    return this.request('POST', '/sign-in', { csrf: await this.csrf(), email, password });
  }
}

for (const { engine, skip } of engines) {
  describeOnEngine(`sign-in throttle under attack on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let clock = Date.now();
    let merchantId: string;
    let counter = 0;
    before(async () => {
      service = await startListeningTestService(engine, { TILL_TRUST_PROXY: '1' }, { now: () => clock });
      ({ merchantId } = await service.merchant());
    });
    after(() => service?.stop());

    const newUser = async () => {
      const email = `victim${++counter}@shop.example`;
      await createUser(service.context.db, { merchantId, email, password: PASSWORD });
      return email;
    };

    test('60 wrong passwords racing for one email are not all checked: no more than the free failures and the one that starts the wait', async () => {
      const email = await newUser();
      const attacker = new HttpBrowser(service.baseUrl, '203.0.113.77');
      const csrf = await attacker.csrf();
      const answers = await Promise.all(Array.from({ length: 60 }, () => attacker.request('POST', '/sign-in', { csrf, email, password: 'a wrong guess!!' })));
      const checked = answers.filter((answer) => answer.status === 401).length;
      const refused = answers.filter((answer) => answer.status === 429);
      assert.equal(checked + refused.length, 60);
      assert.ok(checked <= EMAIL_POLICY.freeFailures + 1, `${checked} passwords were checked`);
      assert.ok(refused.every((answer) => Number(answer.headers.get('retry-after')) >= 1));
      // The racing answers were all counted: the wait is the one the checked failures earned.
      const row = await service.context.db
        .selectFrom('sign_in_throttle')
        .selectAll()
        .where('subject', 'like', `%${email}%`)
        .orderBy('failures', 'desc')
        .executeTakeFirstOrThrow();
      assert.equal(row.failures, checked);
    });

    test('an attacker from another IP locking the email does not lock its merchant out of signing in, from a new browser or a known one', async () => {
      const email = await newUser();
      // The merchant has signed in before from this browser.
      const known = new HttpBrowser(service.baseUrl, '198.51.100.20');
      assert.equal((await known.signIn(email, PASSWORD)).status, 303);
      const attacker = new HttpBrowser(service.baseUrl, '203.0.113.78');
      for (let i = 0; i < EMAIL_POLICY.lockAfter + 5; i++) {
        clock += EMAIL_POLICY.slowdownMaxMs;
        await attacker.signIn(email, 'a wrong guess!!');
      }
      clock += EMAIL_POLICY.slowdownMaxMs;
      const locked = await attacker.signIn(email, PASSWORD);
      assert.equal(locked.status, 429, 'the attacker is locked, even with the right password');
      assert.ok(Number(locked.headers.get('retry-after')) > 60);
      assert.equal((await new HttpBrowser(service.baseUrl, '198.51.100.21').signIn(email, PASSWORD)).status, 303, 'a new browser elsewhere');
      known.cookies.delete('till_session');
      assert.equal((await known.signIn(email, PASSWORD)).status, 303, 'the known browser');
    });

    test('guessing spread over many IPs locks the email for new browsers only: a browser it signed in from still signs in', async () => {
      const email = await newUser();
      const known = new HttpBrowser(service.baseUrl, '198.51.100.40');
      assert.equal((await known.signIn(email, PASSWORD)).status, 303);
      known.cookies.delete('till_session');
      for (let i = 0; i < ACCOUNT_POLICY.lockAfter; i++) {
        clock += ACCOUNT_POLICY.slowdownMaxMs;
        assert.equal((await new HttpBrowser(service.baseUrl, `10.9.${i >> 8}.${i & 255}`).signIn(email, 'a wrong guess!!')).status, 401);
      }
      assert.equal((await new HttpBrowser(service.baseUrl, '198.51.100.41').signIn(email, PASSWORD)).status, 429, 'a new browser');
      const knownAttempt = await known.signIn(email, PASSWORD);
      assert.equal(knownAttempt.status, 303, 'the known browser');
      // A known-browser cookie is worth nothing for another email, nor copied to another email's attempts.
      const other = await newUser();
      const forged = new HttpBrowser(service.baseUrl, '198.51.100.41');
      forged.cookies.set('till_known_browser', known.cookies.get('till_known_browser')!);
      assert.equal((await forged.signIn(email, PASSWORD)).status, 303, 'the same cookie elsewhere is the same browser');
      forged.cookies.delete('till_session');
      for (let i = 0; i < EMAIL_POLICY.lockAfter; i++) {
        clock += EMAIL_POLICY.slowdownMaxMs;
        await forged.signIn(other, 'a wrong guess!!');
      }
      clock += EMAIL_POLICY.slowdownMaxMs;
      assert.equal((await forged.signIn(other, PASSWORD)).status, 429, 'the cookie of one email does not shield another');
    });

    test('a client naming other addresses in X-Forwarded-For is still counted at the address its proxy saw', async () => {
      const attacker = new HttpBrowser(service.baseUrl, '203.0.113.80');
      const answers: number[] = [];
      for (let i = 0; i < IP_POLICY.freeFailures + 2; i++) {
        attacker.claimed = `192.0.2.${i + 1}`;
        answers.push((await attacker.signIn(`sprayed${i}@shop.example`, 'a wrong guess!!')).status);
      }
      assert.deepEqual(answers.slice(-2), [401, 429], 'slowed down at its real address');
    });

    test("a signed-in merchant's password re-check is not locked by someone else guessing the email at the sign-in page", async () => {
      const email = await newUser();
      const merchant = new HttpBrowser(service.baseUrl, '198.51.100.30');
      assert.equal((await merchant.signIn(email, PASSWORD)).status, 303);
      const attacker = new HttpBrowser(service.baseUrl, '203.0.113.79');
      for (let i = 0; i < EMAIL_POLICY.lockAfter + 5; i++) {
        clock += EMAIL_POLICY.slowdownMaxMs;
        await attacker.signIn(email, 'a wrong guess!!');
      }
      clock += EMAIL_POLICY.slowdownMaxMs;
      const csrf = await merchant.csrf('/dashboard/settings');
      const address = '0x1111111111111111111111111111111111111111';
      const changed = await merchant.request('POST', '/dashboard/settings/wallet', { csrf, wallet: address, confirm: address.slice(-4), password: PASSWORD });
      assert.doesNotMatch(changed.body, /too many times/);
      assert.equal(changed.status, 303);
    });
  });
}
