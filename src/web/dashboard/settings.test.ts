// Settings: business details, the payout wallet behind the password (checksummed, confirmed by its
// last characters, audited), accepted chains; every refusal names its field and saves nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getAddress } from 'viem';
import { changeWallet, OPERATOR, searchActivity } from '../../merchants/events.ts';
import { findMerchant } from '../../merchants/merchants.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { csrfField, postFromOrigin, signedInMerchant } from '../../testing/page-browser.ts';

const WALLET = '0x52908400098527886e0f7030069857d2e4169ee7';
const CHECKSUMMED = getAddress(WALLET);

/** Asserts a refused form: 400, the alert names the field's label, and the field itself is marked invalid. */
function assertRefused(answer: { statusCode: number; body: string }, label: string, fieldId: string) {
  assert.equal(answer.statusCode, 400, answer.body);
  const alert = /<p role="alert" class="problem">([^<]*)<\/p>/.exec(answer.body)?.[1] ?? '';
  assert.ok(alert.startsWith(label), `${alert} should name ${label}`);
  assert.match(answer.body, new RegExp(`id="${fieldId}"[^>]*aria-invalid="true"`));
}

for (const { engine, skip } of engines) {
  describeOnEngine(`dashboard settings on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());
    const merchantRow = async (id: string) => (await findMerchant(service.context.db, id))!;
    /** The merchant's payout wallet changes in its activity log, newest first. */
    const walletChanges = (merchantId: string) => searchActivity(service.context.db, merchantId, { type: 'wallet_changed' }, 10);

    test('business details are saved and shown again', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const page = await browser.request('GET', '/dashboard/settings');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /aria-current="page">Settings</);
      const saved = await browser.request('POST', '/dashboard/settings/business', {
        csrf: csrfField(page.body),
        name: '  Corner Coffee ',
        support_email: 'help@corner.example',
        website_url: 'https://corner.example',
      });
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, '/dashboard/settings?saved=business');
      const again = await browser.request('GET', saved.headers.location);
      assert.match(again.body, /role="status" class="done">Business details saved\./);
      assert.match(again.body, /value="help@corner\.example"/);
      const merchant = await merchantRow(merchantId);
      assert.deepEqual([merchant.name, merchant.supportEmail, merchant.websiteUrl], ['Corner Coffee', 'help@corner.example', 'https://corner.example']);
      // Optional fields emptied are cleared.
      await browser.request('POST', '/dashboard/settings/business', { csrf: csrfField(page.body), name: 'Corner Coffee', support_email: '', website_url: '' });
      assert.deepEqual([(await merchantRow(merchantId)).supportEmail, (await merchantRow(merchantId)).websiteUrl], [null, null]);
    });

    test('each refused business field is named, the typed values come back, and nothing is saved', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const before = await merchantRow(merchantId);
      const csrf = await browser.csrf('/dashboard/settings');
      const good = { csrf, name: 'New name', support_email: 'help@shop.example', website_url: 'https://shop.example' };
      const cases: [Record<string, string>, string, string][] = [
        [{ name: '   ' }, 'Business name', 'field-name'],
        [{ name: 'x'.repeat(101) }, 'Business name', 'field-name'],
        [{ support_email: 'not an email' }, 'Support email', 'field-support-email'],
        [{ website_url: 'ftp://shop.example' }, 'Website', 'field-website-url'],
        [{ website_url: 'shop.example' }, 'Website', 'field-website-url'],
        [{ website_url: 'https://user:pw@shop.example' }, 'Website', 'field-website-url'],
      ];
      for (const [change, label, id] of cases) {
        const answer = await browser.request('POST', '/dashboard/settings/business', { ...good, ...change });
        assertRefused(answer, label, id);
        assert.match(answer.body, /value="New name"|value="x{101}"|value=" {3}"/);
      }
      assert.deepEqual(await merchantRow(merchantId), before);
    });

    test('the wallet is refused without the right password, and accepted with it: checksummed, audited, on the overview', async () => {
      const { browser, merchantId, password } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const wrong = await browser.request('POST', '/dashboard/settings/wallet', { csrf, wallet: WALLET, confirm: '9ee7', password: 'not the password at all' });
      assertRefused(wrong, 'Your password', 'field-password');
      assert.ok(wrong.body.includes(`value="${WALLET}"`), 'the typed address comes back');
      assert.ok(!wrong.body.includes('not the password at all'), 'the password never comes back');
      const missing = await browser.request('POST', '/dashboard/settings/wallet', { csrf, wallet: WALLET, confirm: '9ee7' });
      assertRefused(missing, 'Your password', 'field-password');
      assert.equal((await merchantRow(merchantId)).wallets.sandbox, null);
      const overviewBefore = await browser.request('GET', '/dashboard');
      assert.ok(!overviewBefore.body.includes('wallet-notice'));

      const saved = await browser.request('POST', '/dashboard/settings/wallet', { csrf, wallet: ` ${WALLET} `, confirm: '9EE7', password });
      assert.equal(saved.statusCode, 303, saved.body);
      assert.equal(saved.headers.location, '/dashboard/settings?saved=wallet');
      assert.equal((await merchantRow(merchantId)).wallets.sandbox, CHECKSUMMED);
      const events = await walletChanges(merchantId);
      assert.equal(events.length, 1);
      assert.deepEqual(events[0]!.detail, { mode: 'sandbox', from: null, to: CHECKSUMMED });
      const settings = await browser.request('GET', '/dashboard/settings?saved=wallet');
      assert.ok(settings.body.includes(`<code class="address">${CHECKSUMMED}</code>`));
      const overview = await browser.request('GET', '/dashboard');
      assert.match(
        overview.body,
        /class="attention wallet-notice">The test payout wallet was set on [^<]+ by you, to <code class="address">0x52908400098527886E0F7030069857D2E4169EE7<\/code>/,
      );

      // The same address again changes nothing and records nothing.
      const same = await browser.request('POST', '/dashboard/settings/wallet', { csrf, wallet: CHECKSUMMED, confirm: '9EE7', password });
      assert.equal(same.headers.location, '/dashboard/settings?saved=wallet-unchanged');
      assert.equal((await walletChanges(merchantId)).length, 1);
    });

    test('a wallet the operator removed (till live prepare clears the sandbox demo wallet) is told on the overview, with what it means', async () => {
      const { browser, merchantId } = await signedInMerchant(service, { walletAddress: CHECKSUMMED });
      assert.equal(await changeWallet(service.context.db, { merchantId, actor: OPERATOR, mode: 'sandbox', walletAddress: null }), true);
      assert.equal((await merchantRow(merchantId)).wallets.sandbox, null);
      const events = await walletChanges(merchantId);
      assert.deepEqual(events[0]!.detail, { mode: 'sandbox', from: CHECKSUMMED, to: null });
      const overview = await browser.request('GET', '/dashboard');
      assert.match(
        overview.body,
        /class="attention wallet-notice">The test payout wallet was removed on [^<]+ by the operator: payments cannot be made until one is set\. If this was not expected/,
      );
    });

    test('a malformed, mis-checksummed or zero address, or the wrong last characters, is refused by field', async () => {
      const { browser, merchantId, password } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const misChecksummed = CHECKSUMMED.replace('E0F', 'e0F');
      const cases: [Record<string, string>, string, string][] = [
        [{ wallet: '' }, 'Wallet address', 'field-wallet'],
        [{ wallet: '0x1234' }, 'Wallet address', 'field-wallet'],
        [{ wallet: `${WALLET}00` }, 'Wallet address', 'field-wallet'],
        [{ wallet: misChecksummed, confirm: '9EE7' }, 'Wallet address', 'field-wallet'],
        [{ wallet: '0x0000000000000000000000000000000000000000', confirm: '0000' }, 'Wallet address', 'field-wallet'],
        [{ wallet: WALLET, confirm: '9ee8' }, 'Last 4 characters', 'field-confirm'],
        [{ wallet: WALLET, confirm: '' }, 'Last 4 characters', 'field-confirm'],
      ];
      for (const [change, label, id] of cases)
        assertRefused(await browser.request('POST', '/dashboard/settings/wallet', { csrf, password, confirm: '9ee7', ...change }), label, id);
      assert.equal((await merchantRow(merchantId)).wallets.sandbox, null);
      // All upper case carries no checksum either: accepted, and stored checksummed.
      const upper = await browser.request('POST', '/dashboard/settings/wallet', {
        csrf,
        password,
        wallet: `0x${WALLET.slice(2).toUpperCase()}`,
        confirm: '9EE7',
      });
      assert.equal(upper.statusCode, 303, upper.body);
      assert.equal((await merchantRow(merchantId)).wallets.sandbox, CHECKSUMMED);
    });

    test('accepted chains: saved when ticked, refused by field when none or an unknown one', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const page = await browser.request('GET', '/dashboard/settings');
      assert.match(
        page.body,
        /<input type="checkbox" id="accept-base-usdc" name="accept" value="base:USDC" checked><label for="accept-base-usdc">USDC on Base<\/label>/,
      );
      const csrf = csrfField(page.body);
      const none = await browser.request('POST', '/dashboard/settings/chains', { csrf });
      assert.equal(none.statusCode, 400);
      assert.match(none.body, /role="alert" class="problem">Accepted chains and tokens must name at least one/);
      assert.match(none.body, /<fieldset aria-describedby="accept-problem">/);
      assert.match(none.body, /value="base:USDC">/, 'the refused form shows what was ticked: nothing');
      const unknown = await browser.request('POST', '/dashboard/settings/chains', [
        ['csrf', csrf],
        ['accept', 'base:USDC'],
        ['accept', 'solana:SOL'],
      ]);
      assert.equal(unknown.statusCode, 400);
      assert.match(unknown.body, /role="alert" class="problem">Accepted chains and tokens refused: [^<]*solana/);
      assert.deepEqual((await merchantRow(merchantId)).acceptedChains, [{ chain: 'base', tokens: ['USDC'] }]);
      const saved = await browser.request('POST', '/dashboard/settings/chains', [
        ['csrf', csrf],
        ['accept', 'base:USDC'],
      ]);
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, '/dashboard/settings?saved=chains');
    });

    test('a post without the CSRF token, or from another origin, is refused and changes nothing', async () => {
      const { browser, merchantId, password } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const before = await merchantRow(merchantId);
      const noToken = await browser.request('POST', '/dashboard/settings/wallet', { wallet: WALLET, confirm: '9ee7', password });
      assert.equal(noToken.statusCode, 403);
      const wrongToken = await browser.request('POST', '/dashboard/settings/business', { csrf: 'x'.repeat(43), name: 'Hijacked' });
      assert.equal(wrongToken.statusCode, 403);
      for (const [url, form] of [
        ['/dashboard/settings/wallet', { csrf, wallet: WALLET, confirm: '9ee7', password }],
        ['/dashboard/settings/business', { csrf, name: 'Hijacked' }],
        ['/dashboard/settings/chains', { csrf, accept: 'base:USDC' }],
      ] as const) {
        const answer = await postFromOrigin(service, browser, url, form);
        assert.equal(answer.statusCode, 403, url);
        assert.match(answer.body, /This form has expired/);
      }
      assert.deepEqual(await merchantRow(merchantId), before);
      const signedOut = await service.app.inject({ method: 'POST', url: '/dashboard/settings/business', payload: { name: 'x' } });
      assert.equal(signedOut.statusCode, 303);
    });

    test("another merchant's user never sees nor changes this merchant's settings", async () => {
      const first = await signedInMerchant(service);
      const firstCsrf = await first.browser.csrf('/dashboard/settings');
      await first.browser.request('POST', '/dashboard/settings/business', {
        csrf: firstCsrf,
        name: 'First Shop Secret Name',
        support_email: 'first@one.example',
        website_url: '',
      });
      await first.browser.request('POST', '/dashboard/settings/wallet', { csrf: firstCsrf, wallet: WALLET, confirm: '9ee7', password: first.password });
      const second = await signedInMerchant(service);
      const page = await second.browser.request('GET', '/dashboard/settings');
      assert.ok(!page.body.includes('First Shop Secret Name') && !page.body.includes('first@one.example') && !page.body.includes(CHECKSUMMED));
      const overview = await second.browser.request('GET', '/dashboard');
      assert.ok(!overview.body.includes('First Shop Secret Name') && !overview.body.includes(CHECKSUMMED) && !overview.body.includes('wallet-notice'));
      // The first one's token is worth nothing in the second's session; the second's own posts change only its own merchant.
      assert.equal((await second.browser.request('POST', '/dashboard/settings/business', { csrf: firstCsrf, name: 'Taken over' })).statusCode, 403);
      const secondCsrf = csrfField(page.body);
      const otherWallet = '0x000000000000000000000000000000000000dEaD';
      const own = await second.browser.request('POST', '/dashboard/settings/wallet', {
        csrf: secondCsrf,
        wallet: otherWallet,
        confirm: 'dead',
        password: second.password,
      });
      assert.equal(own.statusCode, 303);
      // A wrong password is refused there as here.
      assertRefused(
        await second.browser.request('POST', '/dashboard/settings/wallet', {
          csrf: secondCsrf,
          wallet: WALLET,
          confirm: '9ee7',
          password: `${first.password}!`,
        }),
        'Your password',
        'field-password',
      );
      const firstMerchant = await merchantRow(first.merchantId);
      assert.deepEqual([firstMerchant.name, firstMerchant.wallets.sandbox], ['First Shop Secret Name', CHECKSUMMED]);
      assert.equal((await merchantRow(second.merchantId)).wallets.sandbox, otherWallet);
    });
  });
}
