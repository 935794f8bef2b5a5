// Settings → Brand: a logo uploaded as a multipart form (taken by its content only, refused by name
// otherwise), removed, and an accent colour refused below WCAG AA; each merchant's own; served from
// Till's origin with a fixed type, nosniff and an inert policy; on the hosted page of the merchant's
// sessions, and nowhere else.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { findBrand, setAccentColor, setLogo } from '../../merchants/brand.ts';
import { noisePng, pngOf } from '../../merchants/fixtures/images.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { type Browser, signedInMerchant } from '../../testing/page-browser.ts';
import { sessionRequest } from '../../testing/shop.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '../../merchants/fixtures', name));
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The alert of a refused settings form, or ''. */
const alertOf = (body: string) => /<p role="alert" class="problem">([^<]*)<\/p>/.exec(body)?.[1] ?? '';

for (const { engine, skip } of engines) {
  describeOnEngine(`dashboard settings: brand on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    /** The logo form as a browser sends it: multipart, with the CSRF field first and the file under the name and type given. */
    async function postLogo(browser: Browser, csrf: string, file: { bytes: Uint8Array; name: string; type: string }, headers: Record<string, string> = {}) {
      const form = new FormData();
      form.set('csrf', csrf);
      form.set('logo', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.name);
      const encoded = new Request('http://till.test/', { method: 'POST', body: form });
      const response = await service.app.inject({
        method: 'POST',
        url: '/dashboard/settings/logo',
        headers: {
          cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          'content-type': encoded.headers.get('content-type')!,
          ...headers,
        },
        payload: Buffer.from(await encoded.arrayBuffer()),
      });
      return response;
    }

    test('a PNG, a JPEG and a WebP are each taken, shown in Settings and served with the type read from their bytes', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      for (const [name, type, declared] of [
        ['logo.png', 'image/png', 'image/png'],
        ['logo.jpg', 'image/jpeg', 'application/octet-stream'],
        ['logo.webp', 'image/webp', 'text/html'],
      ] as const) {
        const bytes = fixture(name);
        const saved = await postLogo(browser, csrf, { bytes, name, type: declared });
        assert.equal(saved.statusCode, 303, saved.body);
        assert.equal(saved.headers.location, '/dashboard/settings?saved=logo');
        const brand = await findBrand(service.context.db, merchantId);
        assert.deepEqual(brand.logo, { type, width: 240, height: 80, hash: sha256(bytes) });
        const page = await browser.request('GET', '/dashboard/settings?saved=logo');
        assert.match(page.body, /role="status" class="done">Logo saved/);
        assert.ok(page.body.includes(`src="/brand/logo/${sha256(bytes)}"`), 'the settings show the logo');

        const served = await service.app.inject({ method: 'GET', url: `/brand/logo/${sha256(bytes)}` });
        assert.equal(served.statusCode, 200);
        assert.equal(served.headers['content-type'], type, 'the sniffed type, never the declared one');
        assert.equal(served.headers['x-content-type-options'], 'nosniff');
        assert.equal(served.headers['content-security-policy'], "default-src 'none'; sandbox");
        assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.deepEqual(served.rawPayload, bytes);
      }
    });

    test('a GIF, an SVG, text renamed to .png, a file too big, too large or too small are refused by name, and nothing changes', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      await postLogo(browser, csrf, { bytes: fixture('logo.png'), name: 'logo.png', type: 'image/png' });
      const before = await findBrand(service.context.db, merchantId);
      const big = noisePng(320, 320);
      const cases: [{ bytes: Uint8Array; name: string; type: string }, RegExp][] = [
        [
          { bytes: Buffer.from('GIF89a\x10\x00\x10\x00\x00\x00\x00'), name: 'logo.gif', type: 'image/gif' },
          /^Logo is a GIF image: only PNG, JPEG or WebP images are taken\.$/,
        ],
        [
          { bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), name: 'logo.svg', type: 'image/svg+xml' },
          /^Logo is an SVG image, which can carry scripts: only PNG, JPEG or WebP images are taken\.$/,
        ],
        [
          { bytes: Buffer.from('hello, I am text\n'), name: 'logo.png', type: 'image/png' },
          /^Logo is not a PNG, JPEG or WebP image: its content is none of these/,
        ],
        [{ bytes: big, name: 'photo.png', type: 'image/png' }, new RegExp(`^Logo is ${Math.ceil(big.length / 1024)} KB: at most 256 KB are taken`)],
        [{ bytes: pngOf(2000, 400), name: 'wide.png', type: 'image/png' }, /^Logo is 2000×400 pixels: at most 1024×1024 are taken\.$/],
        [{ bytes: pngOf(10, 10), name: 'tiny.png', type: 'image/png' }, /^Logo is 10×10 pixels: at least 16×16 are needed to be seen\.$/],
        [{ bytes: new Uint8Array(0), name: '', type: 'application/octet-stream' }, /^Logo must be chosen/],
      ];
      for (const [file, message] of cases) {
        const refused = await postLogo(browser, csrf, file);
        assert.equal(refused.statusCode, 400, `${file.name}: ${refused.statusCode}`);
        assert.match(alertOf(refused.body), message, file.name);
        assert.match(refused.body, /id="field-logo"[^>]*aria-invalid="true"/);
      }
      assert.deepEqual(await findBrand(service.context.db, merchantId), before);
    });

    test('a logo form body over 1 MiB, even far over, gets the settings page naming the logo field, never the JSON of the framework', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const before = await findBrand(service.context.db, merchantId);
      for (const size of [1024 * 1024 + 1, 8 * 1024 * 1024, 40 * 1024 * 1024]) {
        const refused = await postLogo(browser, csrf, { bytes: new Uint8Array(size), name: 'huge.png', type: 'image/png' });
        assert.equal(refused.statusCode, 413, `${size} B`);
        assert.match(String(refused.headers['content-type']), /^text\/html/);
        assert.match(alertOf(refused.body), /^Logo is about \d+\.\d MB: at most 256 KB are taken\. Save it smaller/, `${size} B`);
        assert.match(refused.body, /id="field-logo"[^>]*aria-invalid="true"/);
        assert.ok(refused.body.includes('id="field-logo-problem"'), 'the reason is under the field, tied to it');
      }
      assert.deepEqual(await findBrand(service.context.db, merchantId), before);
    });

    test('the logo form is CSRF-guarded like every form: no token, a wrong one, or another origin changes nothing', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const file = { bytes: fixture('logo.png'), name: 'logo.png', type: 'image/png' };
      assert.equal((await postLogo(browser, '', file)).statusCode, 403);
      assert.equal((await postLogo(browser, 'not-the-token', file)).statusCode, 403);
      assert.equal((await postLogo(browser, csrf, file, { origin: 'https://evil.example' })).statusCode, 403);
      assert.equal((await postLogo(browser, csrf, file, { 'sec-fetch-site': 'cross-site' })).statusCode, 403);
      assert.equal((await findBrand(service.context.db, merchantId)).logo, null);
      const remove = await browser.request('POST', '/dashboard/settings/logo/remove', { csrf: 'wrong' });
      assert.equal(remove.statusCode, 403);
      const accent = await browser.request('POST', '/dashboard/settings/accent', { accent_color: '#0f766e' });
      assert.equal(accent.statusCode, 403);
      assert.equal((await findBrand(service.context.db, merchantId)).accentColor, null);
    });

    test('the accent colour is saved, refused below WCAG AA with its ratio, and cleared when emptied', async () => {
      const { browser, merchantId } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const saved = await browser.request('POST', '/dashboard/settings/accent', { csrf, accent_color: '#0F766E' });
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, '/dashboard/settings?saved=accent');
      assert.equal((await findBrand(service.context.db, merchantId)).accentColor, '#0f766e');
      const page = await browser.request('GET', saved.headers.location);
      assert.match(page.body, /id="field-accent-color"[^>]*value="#0f766e"/);
      assert.ok(page.body.includes('href="/brand/accent/0f766e.css"'), 'the settings preview the colour');

      const yellow = await browser.request('POST', '/dashboard/settings/accent', { csrf, accent_color: '#ffff00' });
      assert.equal(yellow.statusCode, 400);
      assert.equal(
        alertOf(yellow.body),
        'Accent colour #ffff00 gives white text a contrast of only 1.07:1, and buttons need at least 4.5:1 (WCAG AA): pick a darker colour.',
      );
      assert.match(yellow.body, /id="field-accent-color"[^>]*value="#ffff00"[^>]*aria-invalid="true"/);
      const malformed = await browser.request('POST', '/dashboard/settings/accent', { csrf, accent_color: 'teal' });
      assert.equal(malformed.statusCode, 400);
      assert.match(alertOf(malformed.body), /^Accent colour is not a colour: # followed by 6 hexadecimal digits/);
      assert.equal((await findBrand(service.context.db, merchantId)).accentColor, '#0f766e', 'the refusals changed nothing');

      const cleared = await browser.request('POST', '/dashboard/settings/accent', { csrf, accent_color: '' });
      assert.equal(cleared.headers.location, '/dashboard/settings?saved=accent-removed');
      assert.equal((await findBrand(service.context.db, merchantId)).accentColor, null);
    });

    test("the logo is removed on request; a merchant's brand is its own: another merchant's forms never touch it", async () => {
      const owner = await signedInMerchant(service);
      const other = await signedInMerchant(service);
      const ownerCsrf = await owner.browser.csrf('/dashboard/settings');
      const otherCsrf = await other.browser.csrf('/dashboard/settings');
      // A logo of this merchant's only (the URL names the bytes: another merchant's same file would share it).
      const bytes = pngOf(201, 67);
      await postLogo(owner.browser, ownerCsrf, { bytes, name: 'logo.png', type: 'image/png' });
      await owner.browser.request('POST', '/dashboard/settings/accent', { csrf: ownerCsrf, accent_color: '#7c2d12' });
      const ownerBrand = await findBrand(service.context.db, owner.merchantId);

      // The other merchant's user acts in its own settings only: its posts carry no merchant to aim at.
      assert.ok(!(await other.browser.request('GET', '/dashboard/settings')).body.includes(sha256(bytes)));
      assert.equal((await other.browser.request('POST', '/dashboard/settings/logo/remove', { csrf: otherCsrf })).statusCode, 303);
      await other.browser.request('POST', '/dashboard/settings/accent', { csrf: otherCsrf, accent_color: '#1e3a8a' });
      await postLogo(other.browser, otherCsrf, { bytes: fixture('logo.jpg'), name: 'logo.jpg', type: 'image/jpeg' });
      // The owner's session token does not work in the other's browser either.
      assert.equal((await other.browser.request('POST', '/dashboard/settings/logo/remove', { csrf: ownerCsrf })).statusCode, 403);
      assert.deepEqual(await findBrand(service.context.db, owner.merchantId), ownerBrand);
      assert.equal((await findBrand(service.context.db, other.merchantId)).accentColor, '#1e3a8a');

      const removed = await owner.browser.request('POST', '/dashboard/settings/logo/remove', { csrf: ownerCsrf });
      assert.equal(removed.headers.location, '/dashboard/settings?saved=logo-removed');
      const after = await findBrand(service.context.db, owner.merchantId);
      assert.deepEqual(after, { accentColor: '#7c2d12', logo: null }, 'the accent colour stays');
      assert.equal((await service.app.inject({ method: 'GET', url: `/brand/logo/${sha256(bytes)}` })).statusCode, 404);
    });

    test('the brand files: unknown hashes, malformed names and low-contrast colours are 404; an accent stylesheet is CSS', async () => {
      for (const url of [
        `/brand/logo/${'0'.repeat(64)}`,
        '/brand/logo/..%2F..%2Fetc',
        '/brand/logo/ABC',
        '/brand/accent/ffff00.css',
        '/brand/accent/0f766e',
        '/brand/accent/0F766E.css',
      ])
        assert.equal((await service.app.inject({ method: 'GET', url })).statusCode, 404, url);
      const css = await service.app.inject({ method: 'GET', url: '/brand/accent/0f766e.css' });
      assert.equal(css.statusCode, 200);
      assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
      assert.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(css.body, ':root{--accent:#0f766e;--accent-bar:4px solid #0f766e}\n');
    });

    test("the hosted page of a merchant's session shows its logo (named by the business) and links its accent; without a brand, neither", async () => {
      const branded = await service.merchant({ name: 'Corner <Coffee>', walletAddress: `0x${'5'.repeat(40)}` });
      const plain = await service.merchant({ name: 'Plain Shop', walletAddress: `0x${'6'.repeat(40)}` });
      const logo = await setLogo(service.context.db, branded.merchantId, fixture('logo.png'));
      await setAccentColor(service.context.db, branded.merchantId, '#7c2d12');
      const pageOf = async (apiKey: string) => {
        const created = await sessionRequest(service, apiKey, 'POST', { amount: 4.5, currency: 'USD' });
        const { sessionId } = created.json() as { sessionId: string };
        return (await service.app.inject({ method: 'GET', url: `/checkout/pay?uid=${sessionId}`, headers: { accept: 'text/html' } })).body;
      };
      const brandedPage = await pageOf(branded.apiKey);
      assert.ok(
        brandedPage.includes(`<img class="brand-logo" src="/brand/logo/${logo.hash}" alt="Corner &lt;Coffee&gt;" width="240" height="80">`),
        'the logo, its alt text the business name, escaped',
      );
      assert.ok(brandedPage.includes('<link rel="stylesheet" href="/brand/accent/7c2d12.css">'));
      const plainPage = await pageOf(plain.apiKey);
      assert.ok(!plainPage.includes('brand-logo') && !plainPage.includes('/brand/'), 'no brand, nothing added');
      const unknown = (await service.app.inject({ method: 'GET', url: '/checkout/pay?uid=ps_nothing' })).body;
      assert.ok(!unknown.includes('/brand/'));
    });
  });
}
