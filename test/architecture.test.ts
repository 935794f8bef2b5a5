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
  user_totp: 'src/accounts/two-factor.ts',
  user_recovery_codes: 'src/accounts/two-factor.ts',
  user_passkeys: 'src/accounts/passkeys.ts',
  sign_in_throttle: 'src/accounts/throttle.ts',
  oauth_clients: 'src/oauth/clients.ts',
  signing_keys: 'src/oauth/signing-keys.ts',
  oauth_grants: 'src/oauth/grants.ts',
  oauth_authorization_requests: 'src/oauth/authorization-requests.ts',
  oauth_grant_secrets: 'src/oauth/grant-secrets.ts',
  mcp_tool_calls: 'src/mcp/audit.ts',
  merchant_events: 'src/merchants/events.ts',
  rate_limit_windows: 'src/limits/limits.ts',
  payment_attempts: 'src/x402/attempts.ts',
  merchant_brands: 'src/merchants/brand.ts',
  refunds: 'src/payments/refunds.ts',
  mail_outbox: 'src/mail/outbox.ts',
  mail_preferences: 'src/mail/preferences.ts',
  mail_receipt_addresses: 'src/mail/receipt-addresses.ts',
  password_resets: 'src/accounts/password-resets.ts',
  invitations: 'src/accounts/invitations.ts',
  sign_ups: 'src/accounts/sign-ups.ts',
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

/** The SQL of each `sql\`…\`` template literal of a source text (the `${…}` inside it blanked, its own nested templates read too). */
function sqlTemplates(text: string): string[] {
  const found: string[] = [];
  let lastEnd = 0;
  // From just after an opening backtick: the template's text, and where it ends.
  const readTemplate = (from: number): [string, number] => {
    let out = '';
    let i = from;
    while (i < text.length && text[i] !== '`') {
      if (text[i] === '\\') {
        out += text.slice(i, i + 2);
        i += 2;
      } else if (text.startsWith('${', i)) {
        i = skipExpression(i + 2);
        out += ' ? ';
      } else out += text[i++];
    }
    return [out, i + 1];
  };
  // From just after `${`: past its closing brace, reading the sql`…` templates inside it.
  const skipExpression = (from: number): number => {
    let depth = 1;
    let i = from;
    while (i < text.length && depth > 0) {
      if (text[i] === '`') {
        const [inner, end] = readTemplate(i + 1);
        if (/\bsql(?:<[^`]*>)?$/.test(text.slice(Math.max(0, i - 40), i))) found.push(inner);
        i = end;
      } else {
        if (text[i] === '{') depth++;
        else if (text[i] === '}') depth--;
        i++;
      }
    }
    return i;
  };
  for (const match of text.matchAll(/\bsql(?:<[^`(]*>)?`/g)) {
    // A template nested in another's ${…} is read with it.
    if (found.length && match.index! < lastEnd) continue;
    const [body, end] = readTemplate(match.index! + match[0].length);
    found.push(body);
    lastEnd = end;
  }
  return found;
}

/** Raw SQL writes outside the owner, each a recorded decision. */
const RAW_ALSO_WRITES: Record<string, string[]> = {
  // docs/decisions.md "E1 limited per API key, in E1's own statement on PostgreSQL": the count is a CTE of E1's statement.
  rate_limit_windows: ['src/sessions/create-session-postgres.ts'],
  // docs/decisions.md "The buyer's address at creation": E1's statement on PostgreSQL writes it as one more CTE.
  mail_receipt_addresses: ['src/sessions/create-session-postgres.ts'],
};

test("every raw sql`…` write (INSERT INTO, UPDATE, DELETE FROM) is in its table's own module too", () => {
  const strays: string[] = [];
  for (const file of production.filter((file) => !file.includes(`${SRC}/db/migrations/`))) {
    for (const body of sqlTemplates(readFileSync(file, 'utf8'))) {
      // `ON CONFLICT … DO UPDATE SET` and `FOR UPDATE [OF|SKIP|NOWAIT]` name no table of their own.
      for (const [, verb, table] of body.matchAll(/\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:ONLY\s+)?(?:"?\w+"?\.)?"?(\w+)"?/gi)) {
        const name = table!.toLowerCase();
        if (['set', 'of', 'skip', 'nowait'].includes(name)) continue;
        const allowed = [TABLE_OWNERS[name], ...(ALSO_WRITES[name] ?? []), ...(RAW_ALSO_WRITES[name] ?? [])];
        if (!allowed.includes(relative(ROOT, file)))
          strays.push(`${relative(ROOT, file)}: sql\`${verb!.toUpperCase().replace(/\s+/, ' ')} ${name}\` — owner is ${TABLE_OWNERS[name] ?? 'not declared'}`);
      }
    }
  }
  assert.deepEqual(strays, []);
  // The scanner itself: a nested template is read, the expressions between are not SQL.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text a file would hold
  const sample = 'const q = sql`WITH a AS (${flag ? sql`UPDATE payments SET x = 1` : sql``}) DELETE FROM users WHERE id = ${id}`;';
  assert.deepEqual(
    sqlTemplates(sample).map((body) => body.trim()),
    ['UPDATE payments SET x = 1', '', 'WITH a AS ( ? ) DELETE FROM users WHERE id =  ?'],
  );
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

/** What a folder may import, as docs/architecture.md's folder table says ("the above" spelled out). */
const BELOW_HTTP = ['common', 'money', 'config', 'db', 'limits', 'context', 'metrics'];
const HTTP_AND_BELOW = ['http', ...BELOW_HTTP];
const CAPABILITIES = ['merchants', 'mail', 'accounts', 'oauth', 'auth', 'webhooks', 'sessions', 'payments', 'chain', 'x402', 'mcp'];
const MAY_IMPORT: Record<string, string[]> = {
  common: ['metrics'], // the type of the metrics, for row-failures.ts
  money: ['common'],
  config: ['common', 'money'],
  db: ['common', 'config'],
  limits: ['common', 'db'],
  context: BELOW_HTTP,
  metrics: BELOW_HTTP,
  http: BELOW_HTTP,
  merchants: ['common', 'db'],
  // Mail sits below every capability whose changes cause mails: they queue them in their own transactions.
  mail: ['merchants', ...HTTP_AND_BELOW],
  accounts: ['merchants', 'mail', ...HTTP_AND_BELOW],
  oauth: ['accounts', ...HTTP_AND_BELOW],
  auth: ['merchants', 'oauth', ...HTTP_AND_BELOW],
  webhooks: ['merchants', 'auth', 'mail', ...HTTP_AND_BELOW],
  sessions: ['webhooks', 'mail', 'auth', 'merchants', ...HTTP_AND_BELOW],
  payments: ['sessions', 'webhooks', 'mail', ...HTTP_AND_BELOW],
  chain: ['payments', 'sessions', 'auth', ...HTTP_AND_BELOW],
  x402: ['chain', 'payments', 'sessions', ...HTTP_AND_BELOW],
  mcp: ['merchants', 'oauth', 'sessions', 'payments', 'chain', ...HTTP_AND_BELOW],
  web: [...CAPABILITIES, ...HTTP_AND_BELOW],
  sandbox: ['http', 'common', 'context'],
};

test('each folder imports only what docs/architecture.md allows it: http and the capabilities import no web/', () => {
  const strays: string[] = [];
  for (const file of production) {
    const from = nodeOf(file).replace(/\.ts$/, '');
    const allowed = MAY_IMPORT[from];
    if (!allowed) continue; // cli/ and main.ts: everything
    for (const target of importsOf(file)) {
      const to = nodeOf(target).replace(/\.ts$/, '');
      if (target.startsWith(SRC) && to !== from && !allowed.includes(to)) strays.push(`${relative(ROOT, file)} imports ${relative(ROOT, target)}`);
    }
  }
  assert.deepEqual(strays, []);
  assert.ok(!MAY_IMPORT.http!.includes('web') && CAPABILITIES.every((folder) => !MAY_IMPORT[folder]!.includes('web')));
  // Every folder of src/ is in the table (a new one must say what it may import).
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !['testing', 'cli'].includes(entry.name))
    .map((entry) => entry.name);
  assert.deepEqual(
    folders.filter((folder) => !MAY_IMPORT[folder]),
    [],
  );
});

test("web/'s page folders import the kit, never each other; the kit imports no page folder", () => {
  const WEB = join(SRC, 'web');
  const webFolder = (file: string) => relative(WEB, file).split('/')[0]!;
  const strays = production
    .filter((file) => file.startsWith(`${WEB}/`) && relative(WEB, file).includes('/'))
    .flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith(`${WEB}/`) && webFolder(target) !== webFolder(file) && webFolder(target) !== 'kit')
        .map((target) => `${relative(ROOT, file)} imports ${relative(ROOT, target)}`),
    );
  assert.deepEqual(strays, []);
});

/**
 * Markup that is not escaped: `trusted()` (the kit's one opt-out) and Hono's own tag and `raw` are
 * used only in web/kit/ and in these files, each for a reason.
 */
const TRUSTED_MARKUP: Record<string, string> = {
  'src/web/checkout/render.ts': "the payment link's QR code: an SVG the qrcode package generates from the URL",
  'src/web/dashboard/links.route.ts': "the payment link's QR code: an SVG the qrcode package generates from the URL",
  'src/web/dashboard/two-factor.route.ts': "the authenticator key's QR code: an SVG the qrcode package generates from the otpauth URI",
};
/** Hand-written escaping still to be replaced by the kit (should be empty; each entry says why it is not). */
const OWN_ESCAPING: Record<string, string> = {
  'src/sandbox/explorer.ts': "the sandbox's block explorer: a page of the separate `till sandbox` process, which may not import web/",
};

test('pages escape by default: trusted() and hono/html only in web/kit/ and the listed files; no escapeHtml outside the kit', () => {
  const inKit = (file: string) => file.startsWith(join(SRC, 'web/kit/'));
  const rawMarkup = production
    .filter((file) => !inKit(file) && /\btrusted\(|from 'hono\/html'|from 'hono'/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(ROOT, file));
  assert.deepEqual(rawMarkup.sort(), Object.keys(TRUSTED_MARKUP).sort());
  const escaping = production.filter((file) => !inKit(file) && /\bescapeHtml\b/.test(readFileSync(file, 'utf8'))).map((file) => relative(ROOT, file));
  assert.deepEqual(escaping.sort(), Object.keys(OWN_ESCAPING).sort());
});
