import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ERROR_CODES } from '../../http/errors.ts';
import { startTestService, type TestService } from '../../testing/harness.ts';
import { renderInlineMarkdown } from './page.ts';

describe('the API reference page', () => {
  test('renders the Markdown of descriptions and nothing else as markup', () => {
    assert.equal(
      String(renderInlineMarkdown('Send `Idempotency-Key` to **retry** *safely*')),
      'Send <code>Idempotency-Key</code> to <strong>retry</strong> <em>safely</em>',
    );
    assert.equal(
      String(renderInlineMarkdown('see [x402](/docs#x402) and [it](https://x402.org)')),
      'see <a href="/docs#x402">x402</a> and <a href="https://x402.org">it</a>',
    );
    assert.equal(String(renderInlineMarkdown('<script>alert(1)</script> `<b>`')), '&lt;script&gt;alert(1)&lt;/script&gt; <code>&lt;b&gt;</code>');
    assert.equal(String(renderInlineMarkdown('[click](javascript:alert(1))')), '[click](javascript:alert(1))');
  });

  describe('served at /docs', () => {
    let service: TestService;
    let html: string;
    before(async () => {
      service = await startTestService('sqlite');
      const response = await service.app.inject({ method: 'GET', url: '/docs' });
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['content-security-policy']), /script-src 'self'/);
      html = response.body;
    });
    after(() => service?.stop());

    test('shows request bodies as tables of fields, and descriptions as Markdown', () => {
      assert.match(html, /<td><code>amount<\/code><\/td><td>number<\/td><td>yes<\/td>/);
      assert.match(
        html,
        /<td><code>orderType<\/code><\/td><td><code>&quot;STATIC&quot;<\/code> \| <code>&quot;TRANSIENT&quot;<\/code> \| null<\/td><td>no<\/td>/,
      );
      assert.match(html, /Send <code>Idempotency-Key<\/code> to make retries safe/);
      assert.doesNotMatch(html, /`/, 'no raw Markdown back-ticks are left');
      assert.doesNotMatch(html, /"\$ref"|"\$defs"/, 'no raw JSON Schema dumps');
    });

    test('lists every error code with its status', () => {
      assert.match(html, /<a href="#error-codes">Error codes<\/a>/);
      for (const { code, status } of ERROR_CODES) assert.match(html, new RegExp(`<tr><td><code>${status}</code></td><td><code>${code}</code></td>`), code);
    });

    test('links every named schema to its own section', () => {
      for (const [, name] of html.matchAll(/href="#schema-(\w+)"/g)) assert.match(html, new RegExp(`id="schema-${name}"`), name);
      assert.match(html, /id="schema-PaymentSessionDetails"/);
    });
  });
});
