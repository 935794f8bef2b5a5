import assert from 'node:assert/strict';
import type { LookupFunction } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../config.ts';
import { type DocumentServer, startDocumentServer } from '../testing/document-server.ts';
import { temporaryDirectories } from '../testing/environment.ts';
import { waitFor } from '../testing/wait.ts';
import { ClientMetadataError, type ClientMetadataResolver, clientMetadataResolver, createClientMetadataResolver } from './client-metadata.ts';

const dataDir = temporaryDirectories('till-client-metadata-');
const configOf = (env: Record<string, string>) => loadConfig({ TILL_DATA_DIR: dataDir(), ...env });

const validDocument = (url: string) => ({
  client_id: url,
  client_name: 'Example Agent',
  redirect_uris: ['http://127.0.0.1:33418/callback', 'https://agent.example/callback'],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
});

async function refusal(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ClientMetadataError, `a ClientMetadataError, not ${String(error)}`);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('client metadata documents', () => {
  let server: DocumentServer;
  const resolvers: ClientMetadataResolver[] = [];
  /** A resolver closed after the tests; loopback clients allowed unless told otherwise. */
  const resolver = (options: Partial<Parameters<typeof clientMetadataResolver>[0]> = {}) => {
    const made = clientMetadataResolver({ allowLoopbackClients: true, ...options });
    resolvers.push(made);
    return made;
  };
  before(async () => {
    server = await startDocumentServer();
  });
  after(async () => {
    await Promise.all(resolvers.map((r) => r.close()));
    await server.close();
  });

  test('a valid document, served on loopback with the development flag on, resolves to the client', async () => {
    const url = server.serveDocument('/happy.json', validDocument);
    const metadata = await resolver().resolve(url);
    assert.deepEqual(metadata, {
      clientId: url,
      clientName: 'Example Agent',
      redirectUris: ['http://127.0.0.1:33418/callback', 'https://agent.example/callback'],
    });
  });

  test('the resolver made from the configuration follows its development flag', async () => {
    const url = server.serveDocument('/configured.json', validDocument);
    const allowing = createClientMetadataResolver(configOf({ TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' }));
    const refusing = createClientMetadataResolver(configOf({}));
    resolvers.push(allowing, refusing);
    assert.equal((await allowing.resolve(url)).clientId, url);
    await refusal(refusing.resolve(url), /accepted only for local development \(TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS\)/);
  });

  test('client_name is trimmed and capped, and falls back to the host', async () => {
    const long = server.serveDocument('/long-name.json', (url) => ({ ...validDocument(url), client_name: `  ${'x'.repeat(300)}  ` }));
    assert.equal((await resolver().resolve(long)).clientName, 'x'.repeat(100));
    const unnamed = server.serveDocument('/unnamed.json', (url) => ({ client_id: url, redirect_uris: ['https://agent.example/cb'] }));
    assert.equal((await resolver().resolve(unnamed)).clientName, '127.0.0.1');
  });

  test('a document is kept for its max-age, held within [1 min, 24 h], and fetched again after', async () => {
    let clock = 1_000_000;
    const cached = resolver({ now: () => clock });
    const cases: [string, string | undefined, number][] = [
      ['/max-age.json', 'public, max-age=600', 600],
      ['/no-store.json', 'no-store', 60],
      ['/short.json', 'max-age=5', 60],
      ['/unsaid.json', undefined, 300],
      ['/year.json', 'max-age=31536000', 86_400],
    ];
    for (const [path, cacheControl, keptSeconds] of cases) {
      const url = server.serveDocument(path, validDocument, cacheControl ? { 'cache-control': cacheControl } : {});
      await cached.resolve(url);
      clock += keptSeconds * 1000 - 1000;
      await cached.resolve(url);
      assert.equal(server.requestsTo(path), 1, `${cacheControl}: a second resolve within ${keptSeconds} s made no request`);
      clock += 2000;
      await cached.resolve(url);
      assert.equal(server.requestsTo(path), 2, `${cacheControl}: after ${keptSeconds} s the document is fetched again`);
    }
  });

  test('concurrent resolves of one client_id share one request', async () => {
    // The document is answered only once the test lets it go: every resolve is made while the request is open.
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const url = server.serve('/concurrent.json', (_request, response) => {
      void answered.then(() => response.writeHead(200).end(JSON.stringify(validDocument(`${server.origin}/concurrent.json`))));
    });
    const shared = resolver();
    const resolving = Promise.all(Array.from({ length: 5 }, () => shared.resolve(url)));
    await waitFor(() => server.requestsTo('/concurrent.json') > 0, 'the request for the document', 10_000);
    answer();
    const results = await resolving;
    assert.equal(server.requestsTo('/concurrent.json'), 1);
    for (const metadata of results) assert.equal(metadata.clientId, url);
  });

  test('a refusal is kept 30 s for its URL, unfetched, then the URL is fetched again', async () => {
    let broken = true;
    let clock = 5_000_000;
    const url = server.serve('/flaky.json', (_request, response) => {
      if (broken) response.writeHead(500).end();
      else response.writeHead(200).end(JSON.stringify(validDocument(`${server.origin}/flaky.json`)));
    });
    const other = server.serveDocument('/flaky-neighbour.json', validDocument);
    const flaky = resolver({ now: () => clock });
    assert.equal(flaky.wouldFetch(url), true);
    await refusal(flaky.resolve(url), /answered HTTP 500 instead of 200/);
    broken = false;
    assert.equal(flaky.wouldFetch(url), false);
    for (let i = 0; i < 5; i++) await refusal(flaky.resolve(url), /answered HTTP 500 instead of 200/);
    assert.equal(server.requestsTo('/flaky.json'), 1, 'the kept refusal is answered without a request');
    assert.equal((await flaky.resolve(other)).clientId, other, 'an HTTP error is the URL’s: the host’s other documents are fetched');
    clock += 30_001;
    assert.equal(flaky.wouldFetch(url), true);
    assert.equal((await flaky.resolve(url)).clientId, url);
    assert.equal(server.requestsTo('/flaky.json'), 2);
    assert.equal(flaky.wouldFetch(url), false, 'a good document is kept');
  });

  test('a host that could not be reached in time is not fetched from, for any URL, for 30 s', async () => {
    let clock = 7_000_000;
    const hanging = server.serve('/hanging/a.json', () => {});
    const sibling = server.serveDocument('/hanging/b.json', validDocument);
    const timing = resolver({ now: () => clock, timeoutMs: 200 });
    await refusal(timing.resolve(hanging), /was not received within 200 ms/);
    assert.equal(timing.wouldFetch(sibling), false);
    await refusal(timing.resolve(sibling), /was not received within 200 ms \(127\.0\.0\.1:\d+ failed less than 30 s ago; not fetched again yet\)/);
    assert.equal(server.requestsTo('/hanging/b.json'), 0);
    clock += 30_001;
    assert.equal((await timing.resolve(sibling)).clientId, sibling);
    assert.equal(server.requestsTo('/hanging/b.json'), 1);
  });

  test('a document whose client_id is not its URL is refused, naming both', async () => {
    const url = server.serveDocument('/mismatch.json', (own) => ({ ...validDocument(own), client_id: `${server.origin}/other.json` }));
    await refusal(
      resolver().resolve(url),
      new RegExp(`the document's client_id \\(${server.origin}/other\\.json\\) is not the URL it was fetched from \\(${url.replaceAll('.', '\\.')}\\)`),
    );
  });

  test('redirect_uris missing, empty, relative or on a non-loopback http host are refused', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['/no-redirects.json', undefined, /no redirect_uris/],
      ['/empty-redirects.json', [], /no redirect_uris/],
      ['/not-a-list.json', 'https://agent.example/cb', /no redirect_uris/],
      ['/relative-redirect.json', ['/callback'], /"\/callback", which is not an absolute URL/],
      ['/number-redirect.json', [42], /42, which is not an absolute URL/],
      ['/http-redirect.json', ['http://agent.example/cb'], /http:\/\/agent\.example\/cb, which is neither https nor http on a loopback address/],
      ['/fragment-redirect.json', ['https://agent.example/cb#x'], /has a fragment/],
    ];
    for (const [path, redirectUris, pattern] of cases) {
      const url = server.serveDocument(path, (own) => ({ client_id: own, redirect_uris: redirectUris }));
      await refusal(resolver().resolve(url), pattern);
    }
  });

  test('a confidential client, or one not using the authorization code flow, is refused', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['/secret.json', { client_secret: 's3cret' }, /has a client_secret/],
      ['/secret-expiry.json', { client_secret_expires_at: 0 }, /has a client_secret_expires_at/],
      ['/basic-auth.json', { token_endpoint_auth_method: 'client_secret_basic' }, /token_endpoint_auth_method is "client_secret_basic"; only "none"/],
      ['/no-code-grant.json', { grant_types: ['client_credentials'] }, /grant_types does not include "authorization_code"/],
      ['/no-code-response.json', { response_types: ['token'] }, /response_types does not include "code"/],
      ['/name-number.json', { client_name: 7 }, /client_name is not a string/],
      ['/name-nul.json', { client_name: 'Agent\u0000' }, /client_name has a control character \(U\+0000\)/],
      ['/name-escape.json', { client_name: '\u001b[31mAgent' }, /client_name has a control character \(U\+001B\)/],
      ['/redirect-nul.json', { redirect_uris: ['https://agent.example/cb\u0000'] }, /redirect_uris has a control character \(U\+0000\)/],
    ];
    for (const [path, extra, pattern] of cases) {
      const url = server.serveDocument(path, (own) => ({ ...validDocument(own), ...extra }));
      await refusal(resolver().resolve(url), pattern);
    }
  });

  test('a document over the size limit is refused, by its Content-Length or as it streams', async () => {
    const big = JSON.stringify({ ...validDocument(`${server.origin}/declared-large.json`), padding: 'x'.repeat(6000) });
    const declared = server.serve('/declared-large.json', (_request, response) => {
      response.writeHead(200, { 'content-length': String(Buffer.byteLength(big)) }).end(big);
    });
    await refusal(resolver().resolve(declared), /is larger than 5120 bytes/);

    // Chunked, no length: the server keeps sending; the resolver stops reading past the limit.
    let sent = 0;
    const streamed = server.serve('/streamed-large.json', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => {
        if (response.destroyed || sent > 1_000_000) return clearInterval(timer);
        sent += 1024;
        response.write(' '.repeat(1024));
      }, 1);
      response.on('close', () => clearInterval(timer));
    });
    await refusal(resolver({ timeoutMs: 10_000 }).resolve(streamed), /is larger than 5120 bytes/);
    assert.ok(sent < 1_000_000, `the body was not read to its end (${sent} bytes sent)`);
  });

  test('a document trickled past the time limit is cut off', async () => {
    // A byte every 50 ms for 10 s, then the rest of a valid document: a limit that only counted idle time would take it.
    const rest = JSON.stringify(validDocument(`${server.origin}/slow.json`)).slice(1);
    let cutOff = false;
    const url = server.serve('/slow.json', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{');
      let sent = 0;
      const timer = setInterval(() => {
        if (++sent < 200) return void response.write(' ');
        clearInterval(timer);
        response.end(rest);
      }, 50);
      response.on('close', () => {
        clearInterval(timer);
        cutOff = !response.writableFinished;
      });
    });
    await refusal(resolver({ timeoutMs: 300 }).resolve(url), /was not received within 300 ms/);
    await waitFor(() => cutOff, 'the resolver to hang up on the trickle', 10_000);
    const silent = server.serve('/silent.json', () => {});
    await refusal(resolver({ timeoutMs: 300 }).resolve(silent), /was not received within 300 ms/);
  });

  test('a redirect, another status or a body that is not a JSON object is refused', async () => {
    const target = server.serveDocument('/target.json', validDocument);
    const redirect = server.serve('/redirect.json', (_request, response) => response.writeHead(302, { location: target }).end());
    await refusal(resolver().resolve(redirect), /answered HTTP 302 \(a redirect, which is not followed\) instead of 200/);
    assert.equal(server.requestsTo('/target.json'), 0);
    const created = server.serve('/created.json', (_request, response) => response.writeHead(201).end(JSON.stringify(validDocument(target))));
    await refusal(resolver().resolve(created), /answered HTTP 201 instead of 200/);
    await refusal(resolver().resolve(`${server.origin}/missing.json`), /answered HTTP 404 instead of 200/);
    const html = server.serve('/page.json', (_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'));
    await refusal(resolver().resolve(html), /is not JSON$/);
    const list = server.serve('/list.json', (_request, response) => response.writeHead(200).end('[1, 2]'));
    await refusal(resolver().resolve(list), /is not a JSON object/);
  });

  test('an http client_id is refused when the development flag is off, before any request', async () => {
    const url = server.serveDocument('/dev-only.json', validDocument);
    await refusal(resolver({ allowLoopbackClients: false }).resolve(url), /is an http URL on this machine, accepted only for local development/);
    await refusal(resolver().resolve('http://agent.example/client.json'), /is not an https URL/);
    assert.equal(server.requestsTo('/dev-only.json'), 0);
  });

  test('https to a loopback or private address is refused by the SSRF guard before connecting', async () => {
    const before = server.connections();
    await refusal(
      resolver({ allowLoopbackClients: false }).resolve(`https://127.0.0.1:${server.port}/client.json`),
      /refused by the SSRF guard: 127\.0\.0\.1 is 127\.0\.0\.1, a loopback address \(allowed only for local development, by TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS\)/,
    );
    await refusal(resolver({ allowLoopbackClients: true }).resolve('https://10.0.0.1/client.json'), /10\.0\.0\.1 is 10\.0\.0\.1, a private/);
    const internal: LookupFunction = (_hostname, options, callback) => {
      if (options.all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '192.168.1.20', family: 4 }]);
      else callback(null, '192.168.1.20', 4);
    };
    await refusal(
      resolver({ allowLoopbackClients: false, lookup: internal }).resolve('https://agent.internal.example/client.json'),
      /agent\.internal\.example is 192\.168\.1\.20, a private, link-local or otherwise non-public address$/,
    );
    const toLoopback: LookupFunction = (_hostname, options, callback) => {
      if (options.all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    };
    await refusal(
      resolver({ allowLoopbackClients: false, lookup: toLoopback }).resolve(`https://rebound.example:${server.port}/client.json`),
      /rebound\.example is 127\.0\.0\.1, a loopback address/,
    );
    assert.equal(server.connections(), before, 'no connection reached the server');
  });

  test('a client_id that is not an acceptable URL is refused before any request', async () => {
    const before = server.connections();
    const cases: [string, RegExp][] = [
      ['not a url', /is not a URL/],
      ['ftp://agent.example/client.json', /is not an https URL/],
      ['https://agent.example/client.json#frag', /has a fragment/],
      ['https://agent.example/client.json#', /has a fragment/],
      ['https://user:pass@agent.example/client.json', /has a user name or password/],
      ['https://user@agent.example/client.json', /has a user name or password/],
      ['https://agent.example', /has no path/],
      ['https://agent.example/', /has no path/],
      ['https://agent.example/?client=1', /has no path/],
      ['https://agent.example/a/../client.json', /"\." or "\.\." path segment/],
      ['https://agent.example/./client.json', /"\." or "\.\." path segment/],
      ['https://agent.example/a/%2e%2E/client.json', /"\." or "\.\." path segment/],
      ['https://agent.example/a/%2E/client.json', /"\." or "\.\." path segment/],
      [`https://agent.example/${'a'.repeat(2048)}`, /at most 2048 are accepted/],
      [`${server.origin}/client.json#x`, /has a fragment/],
      ['https://agent.example/client\u0000.json', /has a control character \(U\+0000\)/],
      ['https://agent.example/client.json\t', /has a control character \(U\+0009\)/],
    ];
    for (const [clientId, pattern] of cases) await refusal(resolver().resolve(clientId), pattern);
    assert.equal(server.connections(), before);
  });
});

test('the development flag for loopback clients is off by default and refused in live mode', () => {
  assert.equal(configOf({}).oauthDevAllowLoopbackClients, false);
  assert.equal(configOf({ TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true' }).oauthDevAllowLoopbackClients, true);
  assert.throws(
    () => configOf({ TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'true', TILL_FACILITATOR_URL: 'https://facilitator.example' }),
    (error: unknown) => error instanceof ConfigError && error.setting === 'TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS' && /live mode/.test(error.message),
  );
  assert.throws(
    () => configOf({ TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS: 'yes' }),
    (error: unknown) => error instanceof ConfigError && error.setting === 'TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS',
  );
});
