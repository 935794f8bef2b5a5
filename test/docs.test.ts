import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TOOLS } from '../src/mcp/tools.ts';
import { routesOf } from '../src/testing/fuzz.ts';
import { startTestService, type TestService } from '../src/testing/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const doc = (name: string) => readFileSync(resolve(ROOT, name), 'utf8');

describe('the docs say what the service does', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService('sqlite');
  });
  after(() => service?.stop());

  test("every metric of Till's own is listed in docs/api.md", async () => {
    const text = (await service.app.inject({ method: 'GET', url: '/metrics' })).body;
    const names = [...text.matchAll(/^# TYPE (till_\w+) /gm)].map((m) => m[1]!).filter((name) => !/^till_(process|nodejs)_/.test(name));
    assert.ok(names.length >= 6, names.join());
    const api = doc('docs/api.md');
    for (const name of names) assert.ok(api.includes(`\`${name}\``), `${name} is documented`);
  });

  test("every registered route's prefix (its first two fixed path segments) is in docs/architecture.md's code map", () => {
    const map = doc('docs/architecture.md');
    const prefixes = new Set(
      routesOf(service.app).map(({ url }) => {
        const fixed = url
          .split('/')
          .slice(1)
          .filter((segment) => segment !== '*');
        const end = fixed.findIndex((segment) => segment.startsWith(':'));
        return `/${(end < 0 ? fixed : fixed.slice(0, end)).slice(0, 2).join('/')}`;
      }),
    );
    assert.ok(prefixes.size >= 20, [...prefixes].join());
    // Named as a path of its own: after a space, backtick, comma or parenthesis, and not as the start of a longer segment.
    const named = (prefix: string) => new RegExp(`(?:^|[\\s\`,(])${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'm').test(map);
    const missing = [...prefixes].filter((prefix) => !named(prefix));
    assert.deepEqual(missing, []);
    // … and every folder of src/ in its folder table.
    const folders = readdirSync(resolve(ROOT, 'src'), { withFileTypes: true }).filter((entry) => entry.isDirectory() && entry.name !== 'testing');
    assert.deepEqual(
      folders.map((entry) => entry.name).filter((name) => !map.includes(`| \`${name}/\``)),
      [],
    );
  });

  test('every MCP tool is in the tools table of docs/mcp.md with its scope', () => {
    const mcp = doc('docs/mcp.md');
    for (const tool of TOOLS) assert.ok(mcp.includes(`| \`${tool.name}\` | \`${tool.scope}\` |`), `${tool.name} (${tool.scope}) is documented`);
  });

  test('order ids shown in the docs have the form the service makes (TX- and 32 upper-case hex)', () => {
    for (const name of ['README.md', 'docs/api.md', 'docs/webhooks.md', 'docs/x402.md']) {
      for (const [id] of doc(name).matchAll(/TX-[A-Za-z0-9_-]+/g)) assert.match(id, /^TX-[0-9A-F]{32}$/, `${id} in ${name}`);
    }
  });
});
