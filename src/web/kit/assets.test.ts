// The built stylesheets and scripts: pages link them by hashed name, cached for a year; the stable
// names answer the same bytes, revalidated; nothing else under /assets/ is read.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { ASSET_SOURCES, type AssetName, assetHref, assetManifest, stylesheetHref } from './assets.ts';

describe('built assets', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService('sqlite', { TILL_SANDBOX: 'true' });
  });
  after(async () => service?.stop());

  const get = (url: string) => service.app.inject({ method: 'GET', url });

  test('every source has a file named by the hash of its content', () => {
    const manifest = assetManifest();
    assert.deepEqual(Object.keys(manifest).sort(), Object.keys(ASSET_SOURCES).sort());
    for (const [name, file] of Object.entries(manifest)) {
      const extension = name.slice(name.lastIndexOf('.'));
      assert.match(file, new RegExp(`^${name.slice(0, -extension.length)}\\.[0-9a-f]{12}\\${extension}$`));
      assert.equal(assetHref(name as AssetName), `/assets/${file}`);
    }
    assert.equal(stylesheetHref(), assetHref('till.css'));
  });

  test('the icon: every page links /favicon.svg, served as an inert SVG; /favicon.ico is sent to it', async () => {
    const signIn = await get('/sign-in');
    assert.match(signIn.body, /<link rel="icon" href="\/favicon\.svg" type="image\/svg\+xml">/);
    const icon = await get('/favicon.svg');
    assert.equal(icon.statusCode, 200);
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assert.equal(icon.headers['x-content-type-options'], 'nosniff');
    assert.match(String(icon.headers['content-security-policy']), /default-src 'none'.*sandbox/);
    assert.match(icon.body, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.doesNotMatch(icon.body, /<script|on\w+=/i);
    const legacy = await get('/favicon.ico');
    assert.equal(legacy.statusCode, 301);
    assert.equal(legacy.headers.location, '/favicon.svg');
  });

  test('a hashed URL is immutable for a year, the stable one revalidated, with the same bytes', async () => {
    for (const name of Object.keys(ASSET_SOURCES) as AssetName[]) {
      const hashed = await get(assetHref(name));
      assert.equal(hashed.statusCode, 200, name);
      assert.equal(hashed.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.match(String(hashed.headers['content-type']), name.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      const hash = assetHref(name).split('.').at(-2);
      assert.equal(createHash('sha256').update(hashed.rawPayload).digest('hex').slice(0, 12), hash, `${name} is named by its content`);
      const stable = await get(`/assets/${name}`);
      assert.equal(stable.statusCode, 200);
      assert.equal(stable.headers['cache-control'], 'no-cache');
      assert.deepEqual(stable.rawPayload, hashed.rawPayload);
    }
  });

  test('pages link the hashed URLs (the scripts: the browser tests run them), and nothing else is served under /assets/', async () => {
    const page = await get('/checkout/pay?uid=ps_unknown');
    assert.equal(page.statusCode, 404);
    assert.ok(page.body.includes(`<link rel="stylesheet" href="${assetHref('checkout.css')}">`));
    for (const url of ['/assets/manifest.json', '/assets/..%2Fmanifest.json', '/assets/checkout.000000000000.js', '/assets/nothing.css'])
      assert.equal((await get(url)).statusCode, 404, url);
  });
});
