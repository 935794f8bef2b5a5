// Fuzzing the service over real HTTP: its routes read from the app itself, requests generated with
// fast-check and sent as raw bytes (so malformed framing, duplicated headers and invalid UTF-8 reach
// the server as written), and a write log kept by database triggers that says which tables a request
// changed.
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';

export type Route = { method: string; url: string };

/**
 * Every route of an app, from Fastify's own route tree (`printRoutes`), so a route added anywhere is
 * listed. HEAD routes Fastify adds beside GET ones are left out: a GET route's requests cover them.
 */
export function routesOf(app: { printRoutes(options: { commonPrefix: false }): string }): Route[] {
  const routes: Route[] = [];
  const prefixes: string[] = [''];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│├└─ ]*?)(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    const url = (prefixes[depth - 1] ?? '') + match[2];
    prefixes[depth] = url;
    prefixes.length = depth + 1;
    const methods = (match[3] ?? '').split(', ').filter(Boolean);
    for (const method of methods) if (!(method === 'HEAD' && methods.includes('GET'))) routes.push({ method, url });
  }
  return routes;
}

/** A request as bytes on the wire will carry it. Header values may hold any byte but CR and LF. */
export type FuzzRequest = {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: [string, string][];
  body: Buffer;
  /** How the body is framed: Content-Length, chunked (in pieces of `chunk` bytes), or no body at all. */
  framing: 'length' | 'chunked' | 'none';
  chunk?: number;
};

const printable = (value: string) => value.replace(/[\r\n]/g, '');

export function encodeRequest(request: FuzzRequest): Buffer {
  const head = [`${request.method} ${printable(request.target)} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close'];
  for (const [name, value] of request.headers) head.push(`${name}: ${printable(value)}`);
  let body = request.framing === 'none' ? Buffer.alloc(0) : request.body;
  if (request.framing === 'length') head.push(`content-length: ${body.length}`);
  if (request.framing === 'chunked') {
    head.push('transfer-encoding: chunked');
    const size = Math.max(1, request.chunk ?? body.length);
    const pieces: Buffer[] = [];
    for (let at = 0; at < body.length; at += size) {
      const piece = body.subarray(at, at + size);
      pieces.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    body = Buffer.concat([...pieces, Buffer.from('0\r\n\r\n')]);
  }
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Describes a request for a failure report: each line and the body cut to 300 characters. */
export function describeRequest(request: FuzzRequest): string {
  const cut = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text);
  const head = encodeRequest({ ...request, body: Buffer.alloc(0), framing: 'none' })
    .toString('latin1')
    .trim()
    .split('\r\n')
    .map(cut);
  return `${head.join('\n')}\n[${request.framing}, ${request.body.length} bytes] ${cut(JSON.stringify(request.body.toString('utf8')))}`;
}

/** Sends a request on a new connection and returns the status of the answer (0 when none came). */
export function sendRaw(port: number, request: FuzzRequest, timeoutMs = 30_000): Promise<{ status: number; head: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ port, host: '127.0.0.1' });
    const finish = () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const head = text.slice(0, end === -1 ? 2000 : end);
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0), head });
    };
    socket.setTimeout(timeoutMs, () => socket.destroy());
    socket.on('data', (data) => chunks.push(data));
    socket.on('error', () => {});
    socket.on('close', finish);
    // Not half-closed after writing: a Node server ends a half-closed connection before a slow answer.
    socket.write(encodeRequest(request));
  });
}

/**
 * A write log kept by the database itself: triggers on every table record each insert, delete, and
 * update that changes a column other than the `ignored` ones (times a read refreshes, such as a key's
 * last use), in the table `fuzz_writes`. A rolled-back write leaves no row. For tests only.
 */
export async function installWriteLog(db: Db, engine: 'sqlite' | 'postgres', ignored: Record<string, string[]> = {}) {
  const tables: string[] = [];
  if (engine === 'sqlite') {
    await sql`CREATE TABLE fuzz_writes (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, op TEXT NOT NULL)`.execute(db);
    const rows = await sql<{
      name: string;
    }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'fuzz_writes'`.execute(db);
    for (const { name } of rows.rows) {
      tables.push(name);
      const columns = await sql<{ name: string }>`SELECT name FROM pragma_table_info(${name})`.execute(db);
      const watched = columns.rows.map((c) => c.name).filter((c) => !ignored[name]?.includes(c));
      const changed = watched.map((c) => `OLD."${c}" IS NOT NEW."${c}"`).join(' OR ') || '0';
      for (const op of ['INSERT', 'DELETE'])
        await sql
          .raw(`CREATE TRIGGER "fuzz_${op}_${name}" AFTER ${op} ON "${name}" BEGIN INSERT INTO fuzz_writes (tbl, op) VALUES ('${name}', '${op}'); END`)
          .execute(db);
      await sql
        .raw(
          `CREATE TRIGGER "fuzz_UPDATE_${name}" AFTER UPDATE ON "${name}" WHEN ${changed} BEGIN INSERT INTO fuzz_writes (tbl, op) VALUES ('${name}', 'UPDATE'); END`,
        )
        .execute(db);
    }
  } else {
    await sql`CREATE TABLE fuzz_writes (id BIGSERIAL PRIMARY KEY, tbl TEXT NOT NULL, op TEXT NOT NULL)`.execute(db);
    await sql
      .raw(
        `CREATE FUNCTION fuzz_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO fuzz_writes (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$`,
      )
      .execute(db);
    const rows = await sql<{ name: string }>`
      SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'fuzz_writes'`.execute(db);
    for (const { name } of rows.rows) {
      tables.push(name);
      const columns = await sql<{ name: string }>`
        SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${name}`.execute(db);
      const watched = columns.rows.map((c) => `"${c.name}"`).filter((c) => !ignored[name]?.includes(c.slice(1, -1)));
      const row = (alias: string) => `ROW(${watched.map((c) => `${alias}.${c}`).join(', ')})`;
      await sql.raw(`CREATE TRIGGER fuzz_write_rows AFTER INSERT OR DELETE ON "${name}" FOR EACH ROW EXECUTE FUNCTION fuzz_write()`).execute(db);
      await sql
        .raw(
          `CREATE TRIGGER fuzz_write_updates AFTER UPDATE ON "${name}" FOR EACH ROW WHEN (${row('OLD')} IS DISTINCT FROM ${row('NEW')}) EXECUTE FUNCTION fuzz_write()`,
        )
        .execute(db);
    }
  }
  let seen = 0;
  return {
    tables,
    /** The writes logged since the last call, as `table op` lines. */
    async since(): Promise<string[]> {
      const rows = await sql<{ id: number | string; tbl: string; op: string }>`SELECT id, tbl, op FROM fuzz_writes WHERE id > ${seen} ORDER BY id`.execute(db);
      const last = rows.rows.at(-1);
      if (last) seen = Number(last.id);
      return rows.rows.map((r) => `${r.tbl} ${r.op}`);
    },
  };
}

/** Percent-encodes any string, a lone surrogate as U+FFFD. */
const encode = (value: string) => encodeURIComponent(value.toWellFormed());

// ── Generators ──────────────────────────────────────────────────────────────────────────────────

const HUGE = [
  '1e309',
  '-1e309',
  '99999999999999999999999999999999999999',
  '-0',
  '0.0000000000000000000001',
  '1e-400',
  '115792089237316195423570985008687907853269984665640564039457584007913129639936',
];

/** Strings that have broken parsers before: empty, numeric edge cases, prototype keys, escapes, control and surrogate characters. */
export const shortNasty: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    'NaN',
    'Infinity',
    'null',
    'true',
    '[]',
    '{}',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '%00',
    '%zz',
    '%',
    '\u0000',
    '\ud800',
    '\uffff',
    '😀',
    'é',
    '../../etc/passwd',
    "' OR 1=1 --",
    '<script>alert(1)</script>',
    '{{7*7}}',
    '0x',
    `0x${'f'.repeat(40)}`,
    `0x${'0'.repeat(64)}`,
    'http://127.0.0.1:1/',
    'javascript:alert(1)',
    'https://shop.example/ok',
    ...HUGE,
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 12 }),
);

/** The short nasty strings, and strings at and past the lengths the service limits. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: shortNasty },
  { weight: 1, arbitrary: fc.constantFrom(64, 65, 255, 256, 500, 501, 2048, 2049, 16_384, 70_000).map((n) => 'a'.repeat(n)) },
);

/** A JSON number as source text, beyond what floats hold, or an ordinary one. */
export const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...HUGE, '0', '1', '10.50', '0.001', '1e2', '-5', '1.123456789', '0.1e1'),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
);

/** Any JSON value, with the nasty strings and huge numbers among its leaves. */
export const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(nastyString, fc.string({ maxLength: 8 })), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** JSON text of `value`, with some numbers written as huge literals (JSON.stringify cannot). */
export const jsonText = (value: unknown) => JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));

/** `template` with one field changed: removed, replaced by any JSON value or a huge number, or an unknown one added. */
export function mutated(template: Record<string, unknown>): fc.Arbitrary<string> {
  const keys = Object.keys(template);
  const added = fc
    .tuple(fc.oneof(nastyString, fc.constantFrom('__proto__', 'constructor')), jsonValue)
    .map(([key, value]) => `{${JSON.stringify(key)}:${jsonText(value) ?? 'null'}${keys.length ? ',' : ''}${jsonText(template).slice(1)}`);
  if (keys.length === 0) return fc.oneof(fc.constant(jsonText(template)), added);
  return fc.oneof(
    fc.constant(jsonText(template)),
    fc.constantFrom(...keys).map((key) => {
      const { [key]: _removed, ...rest } = template;
      return jsonText(rest);
    }),
    fc.tuple(fc.constantFrom(...keys), jsonValue).map(([key, value]) => jsonText({ ...template, [key]: value })),
    fc.tuple(fc.constantFrom(...keys), numberText).map(([key, value]) => jsonText({ ...template, [key]: '§' }).replace('"§"', value)),
    added,
  );
}

/** Nesting deeper than any parser should walk. */
const deepNesting = fc.constantFrom(10, 1_000, 100_000).map((depth) => `${'['.repeat(depth)}1${']'.repeat(depth)}`);

/** Bodies that are not JSON, or not UTF-8: random bytes, truncations, gzip of JSON, invalid sequences. */
export const junkBytes: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc.constantFrom('{', '{"a":', '"', '[1,', 'null', '1', 'true', '\ufeff{}', '{}{}', '{"a":1}garbage').map((s) => Buffer.from(s)),
  fc.constant(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0xfe, 0x22, 0x7d])),
  fc.constant(Buffer.from([0xed, 0xa0, 0x80])),
  jsonValue.map((v) => gzipSync(jsonText(v) ?? 'null')),
);

/** A body for a JSON route: near-valid, any JSON, deeply nested, oversize, or not JSON at all. */
export function jsonBody(templates: Record<string, unknown>[], limit: number): fc.Arbitrary<Buffer> {
  const nearValid = templates.length > 0 ? fc.oneof(...templates.map(mutated)) : jsonValue.map(jsonText);
  return fc.oneof(
    { weight: 6, arbitrary: nearValid.map((s) => Buffer.from(s)) },
    { weight: 2, arbitrary: jsonValue.map((v) => Buffer.from(jsonText(v) ?? 'null')) },
    { weight: 1, arbitrary: deepNesting.map((s) => Buffer.from(s)) },
    { weight: 1, arbitrary: fc.constantFrom(limit - 1, limit, limit + 1).map((size) => Buffer.from(`{"x":"${'a'.repeat(Math.max(0, size - 8))}"}`)) },
    { weight: 2, arbitrary: junkBytes },
  );
}

/** A form body: the route's own field names and some others, each with a nasty value or a valid one, repeated at times. */
export function formBody(fields: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<Buffer> {
  const names = Object.keys(fields);
  const pair = fc.oneof(
    {
      weight: 4,
      arbitrary: names.length
        ? fc.constantFrom(...names).chain((name) => fc.tuple(fc.constant(name), fc.oneof(fields[name] as fc.Arbitrary<string>, nastyString)))
        : fc.tuple(nastyString, nastyString),
    },
    { weight: 1, arbitrary: fc.tuple(nastyString, nastyString) },
  );
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(pair, { maxLength: 8 }).map((pairs) => Buffer.from(new URLSearchParams(pairs).toString())) },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }).map((s) => Buffer.from(s)) },
    { weight: 1, arbitrary: fc.constantFrom(16 * 1024 - 1, 16 * 1024 + 1).map((size) => Buffer.from(`a=${'b'.repeat(size - 2)}`)) },
    { weight: 1, arbitrary: junkBytes },
  );
}

/** A query string: the route's own keys and others, repeated, as arrays, percent-encoded or not. */
export function queryString(keys: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const names = Object.keys(keys);
  const own = (name: string) => (Object.hasOwn(keys, name) && keys[name]) || shortNasty;
  const part = (key: fc.Arbitrary<string>) =>
    key.chain((name) =>
      fc.oneof(
        { weight: 4, arbitrary: own(name).map((v) => `${encode(name)}=${encode(v)}`) },
        { weight: 1, arbitrary: fc.oneof(own(name), nastyString).map((v) => `${encode(name)}[]=${encode(v)}`) },
        { weight: 1, arbitrary: fc.constant(encode(name)) },
        {
          weight: 1,
          arbitrary: fc.constantFrom('%', '%zz', '%00', '%ff%fe', '+', '=', '&', ';', '%E0%A4%A', '%C0%AF').map((junk) => `${encode(name)}=${junk}`),
        },
        { weight: 1, arbitrary: nastyString.map((v) => `${encode(name)}=${v.replace(/[^\x21-\x7e]/g, '')}`) },
      ),
    );
  const query = (key: fc.Arbitrary<string>) => fc.array(part(key), { minLength: 1, maxLength: 4 }).map((parts) => `?${parts.join('&')}`);
  return fc.oneof({ weight: 3, arbitrary: fc.constant('') }, ...(names.length ? [{ weight: 4, arbitrary: query(fc.constantFrom(...names)) }] : []), {
    weight: 2,
    arbitrary: query(names.length ? fc.oneof(fc.constantFrom(...names), shortNasty) : shortNasty),
  });
}

/** A path parameter: a real value (most often), or something else, percent-encoded or raw. */
export function pathValue(real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: real.length ? fc.constantFrom(...real) : nastyString.map(encode) },
    { weight: 2, arbitrary: nastyString.map(encode) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%00', '..', '.', '%2F', '%2e%2e', 'a%20b', '~', '*', ':id', "'", '"') },
  );
}

/** Content types a client may send: right, wrong, with parameters and charsets, duplicated, missing. */
export const contentTypes: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string[]>(['application/json']) },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom(
        'application/json; charset=utf-8',
        'APPLICATION/JSON;CHARSET="UTF-8"',
        'application/json; charset=latin1',
        'application/json; charset',
        'application/json;;;',
        'application/merge-patch+json',
        'application/x-www-form-urlencoded',
        'application/x-www-form-urlencoded; charset=utf-8',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        '*/*',
        'json',
        '',
        ';',
        'application/json\u00e9',
      )
      .map((type) => [type]),
  },
  { weight: 1, arbitrary: fc.constant<string[]>([]) },
  { weight: 1, arbitrary: fc.constant<string[]>(['application/json', 'text/plain']) },
  { weight: 1, arbitrary: nastyString.map((type) => [type]) },
);

/** Content-Encoding values, from none to garbage; the body itself is not re-encoded to match. */
export const contentEncodings: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string[]>([]) },
  { weight: 1, arbitrary: fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'gzip, gzip', 'x-garbage', '').map((e) => [e]) },
);

/** Idempotency-Key values: none most often, a few shared ones (so keys are reused), or nasty ones. */
export const idempotencyKeys: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<string[]>([]) },
  { weight: 2, arbitrary: fc.constantFrom('key-1', 'key-2', 'key-3').map((k) => [k]) },
  { weight: 1, arbitrary: nastyString.map((k) => [k]) },
  { weight: 1, arbitrary: fc.constant<string[]>(['key-1', 'key-2']) },
);

/** Every path to a value inside `value` (objects and arrays walked), the root included. */
function pathsOf(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [at];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [at, ...entries.flatMap(([key, v]) => pathsOf(v, [...at, key]))];
}

/**
 * A decoded x402 proof with one value somewhere inside it changed (any JSON, a huge number, a wrong
 * type) or removed, base64-encoded again, padded or not, at times as base64url.
 */
export function mutatedDeep(template: unknown): fc.Arbitrary<string> {
  const paths = pathsOf(template).filter((p) => p.length > 0);
  const replacement = fc.oneof(
    jsonValue.map((v) => ({ text: undefined as string | undefined, value: v, remove: false })),
    numberText.map((t) => ({ text: t, value: '§§', remove: false })),
    fc.constant({ text: undefined, value: undefined, remove: true }),
  );
  return fc.tuple(fc.constantFrom(...paths), replacement, fc.constantFrom('base64', 'base64url', 'base64-unpadded')).map(([path, change, encoding]) => {
    const copy = structuredClone(template) as Record<string | number, unknown>;
    let holder = copy;
    for (const key of path.slice(0, -1)) holder = holder[key] as Record<string | number, unknown>;
    const last = path.at(-1) as string | number;
    if (change.remove) delete holder[last];
    else holder[last] = change.value;
    const json = change.text ? jsonText(copy).replace('"§§"', change.text) : jsonText(copy);
    const encoded = Buffer.from(json).toString(encoding === 'base64url' ? 'base64url' : 'base64');
    return encoding === 'base64-unpadded' ? encoded.replace(/=+$/, '') : encoded;
  });
}

// ── Fetched documents ───────────────────────────────────────────────────────────────────────────

/** A short string with a C0 control character or DEL somewhere in it. */
export const withControlCharacter: fc.Arbitrary<string> = fc
  .tuple(fc.string({ maxLength: 8 }), fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.constant(0x7f)), fc.string({ maxLength: 8 }))
  .map(([before, code, after]) => `${before}${String.fromCharCode(code)}${after}`);

/** What a site answers when the service fetches a document from it: any status, headers and bytes. */
export type ServedDocument = { status: number; headers: Record<string, string>; body: (url: string) => Buffer };

/** Stands for the document's own URL in a template, replaced when the document is served. */
export const OWN_URL = '{{own-url}}';

/**
 * A document a hostile or careless site may serve where the service fetches one (a Client ID
 * Metadata Document): the template with one field changed, nasty strings (control characters,
 * lone surrogates, huge lengths) in the fields the service keeps, any JSON, junk bytes or an
 * oversize body; under a status that is mostly 200, and content types and Cache-Control values
 * from right to garbage. `OWN_URL` in the template becomes the URL it is served at.
 */
export function servedDocument(template: Record<string, unknown>, limit: number): fc.Arbitrary<ServedDocument> {
  const withField = (field: string, value: fc.Arbitrary<unknown>) => value.map((v) => jsonText({ ...template, [field]: v }));
  const kept = fc.oneof(withControlCharacter, nastyString, fc.string({ unit: 'binary', maxLength: 20 }));
  const redirectUris = template.redirect_uris as string[];
  const text = fc.oneof(
    { weight: 4, arbitrary: mutated(template) },
    { weight: 3, arbitrary: withField('client_name', kept) },
    {
      weight: 2,
      arbitrary: withField(
        'redirect_uris',
        fc.array(
          fc.oneof(
            kept,
            kept.map((s) => `${redirectUris[0]}${s}`),
          ),
          { minLength: 1, maxLength: 3 },
        ),
      ),
    },
    { weight: 1, arbitrary: jsonValue.map((v) => jsonText(v) ?? 'null') },
    { weight: 1, arbitrary: fc.constantFrom(limit, limit + 1).map((size) => jsonText({ ...template, padding: 'a'.repeat(size) })) },
  );
  const body = fc.oneof(
    { weight: 6, arbitrary: text.map((t) => (url: string) => Buffer.from(t.replaceAll(OWN_URL, url))) },
    { weight: 1, arbitrary: junkBytes.map((bytes) => () => bytes) },
  );
  const status = fc.oneof({ weight: 8, arbitrary: fc.constant(200) }, { weight: 1, arbitrary: fc.constantFrom(201, 204, 301, 304, 404, 500, 503) });
  const headers = fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: fc.constantFrom('text/html', 'application/json; charset=latin1', '') },
      ),
      fc.oneof(
        { weight: 3, arbitrary: fc.constant('') },
        {
          weight: 1,
          arbitrary: fc.constantFrom('max-age=0', 'no-store', 'max-age=-1', `max-age=${'9'.repeat(30)}`, 'max-age="600"', 'private, max-age=60, no-cache'),
        },
        { weight: 1, arbitrary: shortNasty.map((v) => v.replace(/[^\x20-\x7e]/g, '')) },
      ),
    )
    .map(([type, cacheControl]) => ({ ...(type ? { 'content-type': type } : {}), ...(cacheControl ? { 'cache-control': cacheControl } : {}) }));
  return fc.record({ status, headers, body });
}
