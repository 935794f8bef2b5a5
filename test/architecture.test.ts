// The structure docs/architecture.md describes, checked: imports point one way between folders,
// src/ never reaches into test/, every table is written by its own module, and the linter that
// `npm run lint` runs refuses an import cycle.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

const isTestCode = (file: string) => file.endsWith('.test.ts') || file.includes(`${SRC}/testing/`) || file.includes('/fixtures/');
const production = sourceFiles(SRC).filter((file) => !isTestCode(file));

/** Relative imports of a file, resolved to absolute paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g), ...text.matchAll(/import\('(\.{1,2}\/[^']+)'\)/g)].map((m) =>
    resolve(dirname(file), m[1]!),
  );
}

/** A file's node in the folder graph: its top folder under src/, or the root file itself (config.ts, main.ts …). */
const nodeOf = (file: string) => relative(SRC, file).split('/')[0]!;

test('no folder of src/ imports a folder that imports it back, directly or through others', () => {
  const edges = new Map<string, Set<string>>();
  const via = new Map<string, string>();
  for (const file of production) {
    for (const target of importsOf(file)) {
      if (!target.startsWith(SRC)) continue;
      const [from, to] = [nodeOf(file), nodeOf(target)];
      if (from === to) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
      via.set(`${from}->${to}`, `${relative(ROOT, file)} imports ${relative(ROOT, target)}`);
    }
  }
  // Depth-first search for a path back to where it started.
  const cycles: string[] = [];
  for (const start of edges.keys()) {
    const stack: [string, string[]][] = [[start, [start]]];
    const seen = new Set<string>();
    while (stack.length) {
      const [node, path] = stack.pop()!;
      for (const next of edges.get(node) ?? []) {
        if (next === start)
          cycles.push(
            path
              .concat(start)
              .map((n, i, all) => (i ? `${via.get(`${all[i - 1]}->${n}`)}` : n))
              .join('\n    '),
          );
        else if (!seen.has(next)) {
          seen.add(next);
          stack.push([next, path.concat(next)]);
        }
      }
    }
  }
  assert.deepEqual(cycles, [], `folder cycles:\n  ${cycles.join('\n  ')}`);
});

test('src/ never imports test/ (test code shared with src lives in src/testing/)', () => {
  const offending = sourceFiles(SRC).flatMap((file) =>
    importsOf(file)
      .filter((target) => target.startsWith(join(ROOT, 'test')))
      .map((target) => `${relative(ROOT, file)} → ${relative(ROOT, target)}`),
  );
  assert.deepEqual(offending, []);
});

test('no folder has a barrel: index.ts files that only re-export are not used', () => {
  const barrels = production.filter((file) => /\/index\.ts$/.test(file) && /^export (\*|\{)[^;]*from /m.test(readFileSync(file, 'utf8')));
  assert.deepEqual(
    barrels.map((file) => relative(ROOT, file)),
    [],
  );
});

/** Each table's one writer: every insert, update and delete of it happens in this module. */
const TABLE_OWNERS: Record<string, string> = {
  merchants: 'src/merchants/merchants.ts',
  api_keys: 'src/merchants/api-keys.ts',
  payment_sessions: 'src/sessions/sessions.ts',
  idempotency_keys: 'src/sessions/idempotency.ts',
  payment_quotes: 'src/x402/quotes.ts',
  payments: 'src/payments/payments.ts',
  webhook_endpoints: 'src/webhooks/endpoints.ts',
  webhook_events: 'src/webhooks/outbox.ts',
  webhook_deliveries: 'src/webhooks/delivery-store.ts',
  webhook_attempts: 'src/webhooks/delivery-store.ts',
  users: 'src/accounts/users.ts',
  user_sessions: 'src/accounts/user-sessions.ts',
  sign_in_throttle: 'src/accounts/throttle.ts',
  oauth_clients: 'src/oauth/clients.ts',
  signing_keys: 'src/oauth/signing-keys.ts',
  oauth_grants: 'src/oauth/grants.ts',
  oauth_authorization_requests: 'src/oauth/authorization-requests.ts',
  oauth_grant_secrets: 'src/oauth/grant-secrets.ts',
  mcp_tool_calls: 'src/mcp/audit.ts',
  merchant_events: 'src/merchants/events.ts',
  rate_limit_windows: 'src/limits/limits.ts',
};
/** webhook_deliveries rows are born in the outbox, with their event, in the status change's transaction. */
const ALSO_WRITES: Record<string, string[]> = { webhook_deliveries: ['src/webhooks/outbox.ts'] };

test("every write to a table happens in that table's own module", () => {
  const strays: string[] = [];
  for (const file of production) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/\b(insertInto|updateTable|deleteFrom)\(\s*'(\w+)/g)) {
      const [, verb, table] = match as unknown as [string, string, string];
      const allowed = [TABLE_OWNERS[table], ...(ALSO_WRITES[table] ?? [])];
      if (!allowed.includes(relative(ROOT, file)))
        strays.push(`${relative(ROOT, file)}: ${verb}('${table}') — owner is ${TABLE_OWNERS[table] ?? 'not declared'}`);
    }
  }
  assert.deepEqual(strays, []);
});

test('npm run lint refuses an import cycle, and passes the same files without it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'till-lint-'));
  try {
    // The project's own rules, on a scratch folder outside the repository.
    const config = JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8'));
    delete config.$schema;
    writeFileSync(join(dir, 'biome.json'), JSON.stringify({ ...config, vcs: { enabled: false }, files: { includes: ['**'] } }));
    writeFileSync(join(dir, 'a.ts'), "import { b } from './b.ts';\n\nexport const a = (): number => b() + 1;\n");
    writeFileSync(join(dir, 'b.ts'), "import { a } from './a.ts';\n\nexport const b = (): number => a();\n");
    const lint = () =>
      promisify(execFile)(join(ROOT, 'node_modules/.bin/biome'), ['lint', '.'], { cwd: dir }).then(
        () => ({ ok: true, output: '' }),
        (error: { stdout: string; stderr: string }) => ({ ok: false, output: error.stdout + error.stderr }),
      );
    const cyclic = await lint();
    assert.equal(cyclic.ok, false);
    assert.match(cyclic.output, /noImportCycles/);
    writeFileSync(join(dir, 'b.ts'), 'export const b = (): number => 1;\n');
    assert.deepEqual(await lint(), { ok: true, output: '' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
