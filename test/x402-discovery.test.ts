// Payment links agents can discover: off by default; a link its merchant ticks "Listed for agents"
// carries x402's bazaar description in its challenges and is listed at /.well-known/x402 (cacheable,
// paged), in the shape of x402's discovery resources and valid against the bazaar extension's own
// schema (the @x402/extensions package); a link not opted in never appears.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PaymentRequired } from '@x402/core/types';
import {
  bazaarResourceServerExtension,
  type DiscoveryExtension,
  type DiscoveryResource,
  declareDiscoveryExtension,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from '@x402/extensions/bazaar';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { startSandbox } from '../src/sandbox/index.ts';
import { setSessionDiscoverable } from '../src/sessions/sessions.ts';
import { describeOnEngine, engines, type PayingService, startPayingService, startTestService, type TestService } from '../src/testing/harness.ts';
import { type Browser, signedInMerchant } from '../src/testing/page-browser.ts';
import { newAccount } from '../src/testing/payer.ts';
import { createSession } from '../src/testing/shop.ts';

type Manifest = {
  x402Version: number;
  items: (DiscoveryResource & { metadata: Record<string, unknown> })[];
  pagination: { limit: number; cursor: string | null };
};

/** What the package's own helpers build for a GET link: the declaration, enriched with the request's method as its server extension does. */
function packageDeclaration(editable: boolean, suggested: string) {
  const { bazaar } = declareDiscoveryExtension({
    ...(editable
      ? {
          input: { amount: suggested },
          inputSchema: { properties: { amount: { type: 'string', description: 'The amount the buyer pays, in the link’s currency' } }, required: ['amount'] },
        }
      : {}),
    output: {
      example: { status: 'SUCCESS', paymentSessionId: 'ps_…', payTo: '0x…', receipt: 'https://…/tx/0x…', paymentId: 'TX-…' },
      schema: {
        properties: {
          status: { type: 'string', const: 'SUCCESS' },
          paymentSessionId: { type: 'string' },
          payTo: { type: 'string' },
          receipt: { type: 'string', description: 'The transaction on the block explorer' },
          paymentId: { type: 'string', description: 'The order id; its receipt is GET /checkout/v2/orders/receipt/{paymentId}' },
        },
        required: ['status', 'paymentSessionId', 'payTo', 'receipt', 'paymentId'],
      },
    },
  });
  return bazaarResourceServerExtension.enrichDeclaration!(bazaar, { method: 'GET', adapter: { getPath: () => '/x402/session/ps_x' } });
}

for (const { engine, skip } of engines) {
  describeOnEngine(`discoverable payment links on ${engine}`, skip, () => {
    let paying: PayingService;
    let service: TestService;
    before(async () => {
      paying = await startPayingService(engine);
      service = paying.service;
    });
    after(() => paying?.stop());

    async function createLink(browser: Browser, fields: Record<string, string>) {
      const csrf = await browser.csrf('/dashboard/links');
      const created = await browser.request('POST', '/dashboard/links', { csrf, currency: 'USD', orderType: 'STATIC', ...fields });
      assert.equal(created.statusCode, 303, created.body);
      return /^\/dashboard\/links\/(ps_[\w-]+)\?done=created$/.exec(String(created.headers.location))![1]!;
    }
    const manifest = async (query = '', headers: Record<string, string> = {}) =>
      service.app.inject({ method: 'GET', url: `/.well-known/x402${query}`, headers });
    /** Every item of every page, following the cursor. */
    async function allItems(limit = 100) {
      const items: Manifest['items'] = [];
      let cursor: string | null = null;
      do {
        const answer = await manifest(`?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(answer.statusCode, 200, answer.body);
        const page = answer.json() as Manifest;
        items.push(...page.items);
        cursor = page.pagination.cursor;
      } while (cursor);
      return items;
    }
    const challengeOf = async (id: string, query = '') => {
      const answer = await service.app.inject({ method: 'GET', url: `/x402/session/${id}${query}` });
      assert.equal(answer.statusCode, 402, answer.body);
      return JSON.parse(Buffer.from(String(answer.headers['payment-required']), 'base64').toString()) as PaymentRequired;
    };

    test('nothing is listed by default; a link ticked "Listed for agents" is, with the bazaar description its challenge carries, valid against the extension’s schema', async () => {
      const { browser } = await signedInMerchant(service, { walletAddress: newAccount().address });
      const hidden = await createLink(browser, { amount: '7', concept: 'Private lesson' });
      assert.equal((await allItems()).filter((i) => i.resource.endsWith(hidden)).length, 0, 'not opted in: never listed');
      assert.equal((await challengeOf(hidden)).extensions?.bazaar, undefined);
      const form = await browser.request('GET', '/dashboard/links');
      assert.match(form.body, /<input type="checkbox" id="discoverable" name="discoverable" aria-describedby="discoverable-hint">/, 'unticked by default');

      const fixed = await createLink(browser, { amount: '12.50', concept: 'Weather report', discoverable: 'on' });
      const donation = await createLink(browser, { amount: '5', concept: 'Donation', editable: 'on', minAmount: '1', discoverable: 'on' });
      const detail = await browser.request('GET', `/dashboard/links/${fixed}`);
      assert.match(detail.body, /<dt>Listed for agents<\/dt><dd>Yes, at \/.well-known\/x402<\/dd>/);
      assert.match(detail.body, /id="discoverable" name="discoverable" aria-describedby="discoverable-hint" checked/);

      const items = await allItems();
      assert.equal(items.filter((i) => i.resource.endsWith(hidden)).length, 0);
      const fixedItem = items.find((i) => i.resource === `http://till.test/x402/session/${fixed}`)!;
      const donationItem = items.find((i) => i.resource === `http://till.test/x402/session/${donation}`)!;
      assert.ok(fixedItem && donationItem);
      assert.deepEqual(fixedItem.metadata, { name: 'Weather report', price: '12.50', currency: 'USD', buyerChoosesAmount: false, merchant: 'Test merchant' });
      assert.deepEqual(donationItem.metadata, {
        name: 'Donation',
        price: '5.00',
        currency: 'USD',
        buyerChoosesAmount: true,
        minAmount: '1.00',
        merchant: 'Test merchant',
      });
      for (const item of items) {
        assert.equal(item.type, 'http');
        assert.equal(item.x402Version, 2);
        assert.ok(!Number.isNaN(Date.parse(item.lastUpdated)));
        const bazaar = item.extensions!.bazaar as DiscoveryExtension;
        assert.deepEqual(validateDiscoveryExtension(bazaar), { valid: true }, 'info valid against the schema the extension publishes');
        assert.deepEqual(validateDiscoveryExtensionSpec(bazaar as never), { valid: true });
      }
      assert.deepEqual(fixedItem.extensions!.bazaar, packageDeclaration(false, '12.50'), 'what the package builds for a GET without input');
      assert.deepEqual(donationItem.extensions!.bazaar, packageDeclaration(true, '5.00'), 'what the package builds for ?amount=');

      // The live challenges carry the same description, beside payment-identifier.
      assert.deepEqual((await challengeOf(fixed)).extensions?.bazaar, fixedItem.extensions!.bazaar);
      const donationChallenge = await challengeOf(donation, '?amount=3');
      assert.deepEqual(donationChallenge.extensions?.bazaar, donationItem.extensions!.bazaar);
      assert.ok(donationChallenge.extensions?.['payment-identifier']);

      // Unticked: gone from the manifest and from its challenge at once.
      const csrf = await browser.csrf(`/dashboard/links/${fixed}`);
      const saved = await browser.request('POST', `/dashboard/links/${fixed}`, { csrf, amount: '12.50', currency: 'USD', concept: 'Weather report' });
      assert.equal(saved.statusCode, 303);
      assert.equal((await allItems()).filter((i) => i.resource.endsWith(fixed)).length, 0);
      assert.equal((await challengeOf(fixed)).extensions?.bazaar, undefined);
    });

    test('the manifest is cacheable (Cache-Control, ETag, 304) and paged by cursor; bad paging is a 400 naming the field', async () => {
      const { browser } = await signedInMerchant(service, { walletAddress: newAccount().address });
      const ids = [];
      for (const concept of ['Page one', 'Page two', 'Page three']) ids.push(await createLink(browser, { amount: '2', concept, discoverable: 'on' }));
      const first = await manifest();
      assert.equal(first.statusCode, 200);
      assert.equal(first.headers['cache-control'], 'public, max-age=60');
      assert.equal(first.headers['access-control-allow-origin'], '*');
      assert.match(String(first.headers['content-type']), /^application\/json/);
      const etag = String(first.headers.etag);
      assert.match(etag, /^"[\w-]{43}"$/);
      const unchanged = await manifest('', { 'if-none-match': etag });
      assert.equal(unchanged.statusCode, 304);
      assert.equal(unchanged.body, '');
      assert.equal((await manifest('', { 'if-none-match': `W/${etag}` })).statusCode, 304);
      assert.equal((await service.app.inject({ method: 'GET', url: '/.well-known/x402.json' })).body, first.body, 'the same manifest under x402.json');

      const pages = [];
      let cursor: string | null = null;
      do {
        const page: Manifest = (await manifest(`?limit=1${cursor ? `&cursor=${cursor}` : ''}`)).json();
        assert.ok(page.items.length <= 1);
        assert.equal(page.pagination.limit, 1);
        pages.push(...page.items.map((i) => i.resource));
        cursor = page.pagination.cursor;
      } while (cursor);
      assert.equal(new Set(pages).size, pages.length, 'no item twice');
      for (const id of ids) assert.ok(pages.includes(`http://till.test/x402/session/${id}`));
      assert.deepEqual(
        pages,
        (await allItems(100)).map((i) => i.resource),
      );

      const archive = await browser.request('POST', `/dashboard/links/${ids[0]}/archive`, { csrf: await browser.csrf(`/dashboard/links/${ids[0]}`) });
      assert.equal(archive.statusCode, 303);
      const after = await manifest('', { 'if-none-match': etag });
      assert.equal(after.statusCode, 200, 'an archived link changes the manifest');
      assert.notEqual(after.headers.etag, etag);
      assert.ok(!after.body.includes(ids[0]!));

      for (const [query, field] of [
        ['?limit=0', 'limit'],
        ['?limit=101', 'limit'],
        ['?limit=two', 'limit'],
        ['?cursor=%21%21', 'cursor'],
        [`?cursor=${Buffer.from('x'.repeat(65)).toString('base64url')}`, 'cursor'],
        ['?page=2', 'page'],
      ]) {
        const refused = await manifest(query);
        assert.equal(refused.statusCode, 400, query);
        assert.equal(refused.json().error.field, field, query);
      }
    });
  });
}

test('a deployment serving live lists live links only, never test ones', async () => {
  const sandbox = await startSandbox({ blockIntervalMs: 0 });
  const service = await startTestService('sqlite', {
    TILL_FACILITATOR_URL: sandbox.facilitatorUrl,
    TILL_BASE_RPC_URL: sandbox.rpcUrl,
    TILL_USDC_ADDRESS: sandbox.usdcAddress,
    TILL_MODES: 'test,live',
    TILL_SANDBOX_URL: sandbox.url,
    TILL_TEST_USDC_ADDRESS: sandbox.usdcAddress,
  });
  try {
    const wallet = newAccount().address;
    const { merchantId, apiKey: liveKey } = await service.merchant({ walletAddress: wallet });
    await service.context.db.updateTable('merchants').set({ test_wallet_address: wallet.toLowerCase() }).where('id', '=', merchantId).execute();
    const testKey = (await createApiKey(service.context.db, merchantId, 'test')).apiKey;
    const base = service.context.config.baseUrl;
    const listen = await service.app.listen({ port: 0, host: '127.0.0.1' });
    const live = await createSession(listen, liveKey, { amount: 3, currency: 'USD', orderType: 'STATIC' });
    const sandboxLink = await createSession(listen, testKey, { amount: 3, currency: 'USD', orderType: 'STATIC' });
    assert.ok(await setSessionDiscoverable(service.context.db, 'live', merchantId, live, true, Date.now()));
    assert.ok(await setSessionDiscoverable(service.context.db, 'sandbox', merchantId, sandboxLink, true, Date.now()));
    const listed = (await service.app.inject({ method: 'GET', url: '/.well-known/x402' })).json() as Manifest;
    assert.deepEqual(
      listed.items.map((i) => i.resource),
      [`${base}/x402/session/${live}`],
    );
  } finally {
    await service.stop();
    await sandbox.stop();
  }
});
