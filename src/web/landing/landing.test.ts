import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startPayingService, startTestService, type TestService } from '../../testing/harness.ts';

describe('the landing page at /', () => {
  let paying: Awaited<ReturnType<typeof startPayingService>>;
  let live: TestService;
  before(async () => {
    paying = await startPayingService('sqlite');
    live = await startTestService('sqlite', { TILL_FACILITATOR_URL: 'http://127.0.0.1:9' });
  });
  after(async () => {
    await paying?.stop();
    await live?.stop();
  });

  test('a browser gets a page linking the docs, with the sandbox and whether its chain answers', async () => {
    const response = await fetch(`${paying.baseUrl}/`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-security-policy')!, /default-src 'none'/);
    const html = await response.text();
    assert.match(html, /<a href="\/docs">API reference<\/a>/);
    assert.match(html, /<a href="\/openapi.json">/);
    assert.match(html, /<strong>Sandbox:<\/strong> test money only/);
    assert.match(html, /<th>Chain<\/th><td>answering, block \d+<\/td>/);
    assert.match(html, new RegExp(paying.sandbox.usdcAddress));
    assert.doesNotMatch(html, /<script/);
  });

  test('a program gets a JSON index; a stopped sandbox is reported, not waited for', async () => {
    const index = await (await fetch(`${paying.baseUrl}/`)).json();
    assert.equal(index.service, 'till');
    assert.equal(index.mode, 'sandbox');
    assert.equal(index.links.apiReference, '/docs');
    assert.equal(index.sandbox.answering, true);
    assert.equal(index.sandbox.faucet, '/sandbox/faucet');
    const stopped = await startTestService('sqlite', {
      TILL_SANDBOX: 'true',
      TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
      TILL_SANDBOX_URL: 'http://127.0.0.1:9',
      TILL_USDC_ADDRESS: '0xae47EB9b9c9E6903b1e91C471308F98b5d2C3049',
    });
    try {
      const html = (await stopped.app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } })).body;
      assert.match(html, /<strong>not answering<\/strong>/);
    } finally {
      await stopped.stop();
    }
  });

  test('in live mode there is no sandbox on the page', async () => {
    const html = (await live.app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } })).body;
    assert.match(html, /runs in <strong>live<\/strong> mode/);
    assert.doesNotMatch(html, /Sandbox|faucet/);
    assert.equal((await live.app.inject({ method: 'GET', url: '/' })).json().sandbox, undefined);
  });
});
