import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import { percentile } from '../../../bench/support.ts';
import type { TestService } from '../../testing/harness.ts';
import { describeOnEngine, engines, startListeningTestService, startTestService } from '../../testing/harness.ts';
import { Browser, csrfField, signedInMerchant } from '../../testing/page-browser.ts';
import { guardWebScope } from './forms.ts';

/** Every route of the app with its methods, read from Fastify's own route tree. */
function registeredRoutes(service: TestService): { url: string; methods: string[] }[] {
  const routes: { url: string; methods: string[] }[] = [];
  const parents: string[] = [];
  for (const line of service.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)(?:[├└]── )?(\S+) \(([^)]+)\)$/.exec(line);
    if (!match) continue;
    const [, indent = '', segment = '', methods = ''] = match;
    const depth = indent.length / 4;
    const parent = depth === 0 ? '' : (parents[depth - 1] ?? '');
    const url = depth === 0 ? segment : segment.startsWith('/') ? `${parent}${segment}` : `${parent.replace(/\/$/, '')}/${segment}`;
    parents[depth] = url;
    parents.length = depth + 1;
    routes.push({ url, methods: methods.split(', ') });
  }
  return routes;
}

/**
 * Form posts that are not pages' forms: the APIs (JSON, the OAuth token endpoint's form, MCP), the
 * sandbox, and the one-click unsubscribe of RFC 8058, which a mail client posts with no cookie and no
 * token: the HMAC in its link is its authority (src/mail/unsubscribe.ts).
 */
const NOT_WEB = /^\/(?:api\/|oauth\/(?:token|revoke)$|mcp$|sandbox\/|x402\/|checkout\/v2\/x402\/|mail\/unsubscribe$|mail\/receipt\/?\.json$)/;

/** Web form posts whose guard is their own form token, before any session: sign-in (and its second factor), password reset, and the buyer's receipt form. */
const SIGNED_OUT_FORMS = [
  '/sign-in',
  '/sign-in/second-factor',
  '/sign-in/second-factor/passkey',
  '/sign-in/second-factor/passkey/options',
  '/sign-in/forgot',
  '/sign-in/reset',
  '/invitations/accept',
  '/sign-up',
  '/sign-up/confirm',
  '/mail/receipt',
];

const BOUNDARY = 'hostile-boundary';
const PART = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f"\r\n\r\nx\r\n`;

/** A multipart body of `count` small text parts (a hostile form: the parser's work grows with the parts, not the bytes). */
function manyParts(count: number): { contentType: string; body: Buffer } {
  return { contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: Buffer.from(`${PART.repeat(count)}--${BOUNDARY}--\r\n`) };
}

/** As many parts as fit in 1 MiB, the largest body any web form takes. */
const HOSTILE_PARTS = Math.floor((1024 * 1024 - 64) / PART.length);

const ms = (value: number) => value.toFixed(1);

/** The multipart encoding of a form as a browser sends it. */
async function multipart(fields: [string, string | { bytes: Uint8Array; name: string }][]): Promise<{ contentType: string; body: Buffer }> {
  const form = new FormData();
  for (const [name, value] of fields) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, new Blob([new Uint8Array(value.bytes)], { type: 'image/png' }), value.name);
  }
  const encoded = new Request('http://till.test/', { method: 'POST', body: form });
  return { contentType: encoded.headers.get('content-type')!, body: Buffer.from(await encoded.arrayBuffer()) };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`the one guard of every web form post on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    /** Every row of every table, to see that a refused post changed nothing. */
    async function everything(): Promise<string> {
      const tables = (await service.context.db.introspection.getTables()).map((table) => table.name).sort();
      const rows: Record<string, unknown[]> = {};
      for (const table of tables) {
        // biome-ignore lint/suspicious/noExplicitAny: every table, whatever its type
        rows[table] = await (service.context.db as any).selectFrom(table).selectAll().execute();
      }
      return JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
    }

    test('a post without the token, from another Origin, or with Sec-Fetch-Site: cross-site is refused (403) on every web POST route, and nothing changes', async () => {
      const webPosts = registeredRoutes(service)
        .filter((route) => route.methods.includes('POST') && !NOT_WEB.test(route.url))
        .map((route) => route.url);
      for (const known of [
        '/sign-in',
        '/sign-out',
        '/oauth/consent/:id',
        '/dashboard/settings/wallet',
        '/dashboard/settings/logo',
        '/dashboard/account/password',
      ])
        assert.ok(webPosts.includes(known), `${known} is among the web posts found: ${webPosts.join(', ')}`);

      const { browser, email, password } = await signedInMerchant(service);
      const sessionToken = csrfField((await browser.request('GET', '/account')).body);
      assert.ok(sessionToken);
      const signedOut = new Browser(service);
      const signInToken = await signedOut.csrf();
      assert.ok(signInToken);

      const before = await everything();
      for (const route of webPosts) {
        const url = route.replace(/:(\w+)/g, 'x_1');
        const signInForm = route === '/sign-in';
        const who = signInForm ? signedOut : browser;
        const token = signInForm ? signInToken : sessionToken;
        // Fields a handler would act on if it ran: the right password, an answer, a wallet …
        const fields = { email, password, current_password: password, decision: 'allow', scope: 'orders:read', name: 'Changed', return_to: '/dashboard' };
        const post = (headers: Record<string, string>, form: Record<string, string>) =>
          service.app.inject({
            method: 'POST',
            url,
            headers: {
              cookie: [...who.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
              'content-type': 'application/x-www-form-urlencoded',
              ...headers,
            },
            payload: new URLSearchParams(form).toString(),
          });
        const withoutToken = await post({}, fields);
        assert.equal(withoutToken.statusCode, 403, `${route} without its token`);
        const fromElsewhere = await post({ origin: 'https://evil.example' }, { ...fields, csrf: token });
        assert.equal(fromElsewhere.statusCode, 403, `${route} from another origin`);
        const crossSite = await post({ 'sec-fetch-site': 'cross-site' }, { ...fields, csrf: token });
        assert.equal(crossSite.statusCode, 403, `${route} with Sec-Fetch-Site: cross-site`);
      }
      assert.equal(await everything(), before, 'a refused post changed nothing');
      // The tokens were right all along: the same post from our page goes through.
      const signedOutNow = await browser.request('POST', '/sign-out', { csrf: sessionToken });
      assert.equal(signedOutNow.statusCode, 303);
    });

    test('a signed-out post to a signed-in form gets its usual answer before its body is read: a malformed, an over-long or a many-part body alike', async () => {
      const signedInPosts = registeredRoutes(service)
        .filter((route) => route.methods.includes('POST') && !NOT_WEB.test(route.url) && !SIGNED_OUT_FORMS.includes(route.url))
        .map((route) => route.url.replace(/:(\w+)/g, 'x_1'));
      assert.ok(signedInPosts.includes('/dashboard/settings/logo'));
      const answerOf = async (url: string, contentType: string, body: Buffer | string) => {
        const answer = await service.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload: body });
        return {
          status: answer.statusCode,
          location: answer.headers.location,
          error: answer.statusCode >= 400 && answer.statusCode !== 403 ? answer.body : undefined,
        };
      };
      const hostileForm = manyParts(HOSTILE_PARTS);
      for (const url of signedInPosts) {
        const usual = await answerOf(url, 'application/x-www-form-urlencoded', 'name=x');
        assert.ok([303, 403].includes(usual.status), `${url}: a signed-out post is sent to sign in or refused, ${JSON.stringify(usual)}`);
        const hostile = {
          'a body no parser takes': await answerOf(url, 'multipart/form-data; boundary=b', 'this is not multipart at all'),
          'a multipart body with no boundary': await answerOf(url, 'multipart/form-data', '--b\r\n'),
          'a url-encoded body over its size limit': await answerOf(url, 'application/x-www-form-urlencoded', `name=${'x'.repeat(2 * 1024 * 1024)}`),
          [`${HOSTILE_PARTS} parts`]: await answerOf(url, hostileForm.contentType, hostileForm.body),
        };
        for (const [what, answer] of Object.entries(hostile)) assert.deepEqual(answer, usual, `${url}, ${what}: the signed-out answer, not a parser's`);
      }
    });

    test('a signed-in post over its form’s part limit is refused (413) naming the limit, before the parts are read; a form within it goes through', async () => {
      const { browser } = await signedInMerchant(service);
      const csrf = await browser.csrf('/dashboard/settings');
      const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
      const post = (url: string, form: { contentType: string; body: Buffer | string }) =>
        service.app.inject({ method: 'POST', url, headers: { cookie, 'content-type': form.contentType }, payload: form.body });
      const png = { bytes: readFileSync(join(import.meta.dirname, '../../merchants/fixtures/logo.png')), name: 'logo.png' };

      const refusals = [
        {
          what: 'a logo form with two files',
          url: '/dashboard/settings/logo',
          form: await multipart([
            ['csrf', csrf],
            ['logo', png],
            ['logo', png],
          ]),
        },
        {
          what: 'a logo form with twelve fields',
          url: '/dashboard/settings/logo',
          form: await multipart([['csrf', csrf], ['logo', png], ...Array.from({ length: 11 }, (_, i): [string, string] => [`extra${i}`, 'x'])]),
        },
        { what: `a logo form of ${HOSTILE_PARTS} parts`, url: '/dashboard/settings/logo', form: manyParts(HOSTILE_PARTS) },
        {
          what: 'a settings form with 40 fields',
          url: '/dashboard/settings/business',
          form: {
            contentType: 'application/x-www-form-urlencoded',
            body: new URLSearchParams([['csrf', csrf], ...Array.from({ length: 39 }, (_, i): [string, string] => [`extra${i}`, 'x'])]).toString(),
          },
        },
        {
          what: 'a file on a form that takes none',
          url: '/dashboard/settings/business',
          form: await multipart([
            ['csrf', csrf],
            ['name', 'Shop'],
            ['logo', png],
          ]),
        },
      ];
      for (const { what, url, form } of refusals) {
        const answer = await post(url, form);
        assert.equal(answer.statusCode, 413, `${what}: ${answer.body}`);
        const { error } = answer.json();
        assert.equal(error.code, 'form_too_large', what);
        assert.match(
          error.message,
          /takes at most \d+ files? and \d+ fields|takes at most \d+ fields and no file/,
          `${what}: the limit is named: ${error.message}`,
        );
      }
      const logo = await post(
        '/dashboard/settings/logo',
        await multipart([
          ['csrf', csrf],
          ['logo', png],
        ]),
      );
      assert.equal(logo.statusCode, 303, logo.body);
      assert.equal(logo.headers.location, '/dashboard/settings?saved=logo');
    });
  });

  describeOnEngine(`/healthz while strangers upload hostile forms on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    before(async () => {
      service = await startListeningTestService(engine);
    });
    after(() => service?.stop());

    test('8 concurrent signed-out uploads of a 1 MiB many-part form: each gets the sign-in answer; /healthz latency meanwhile reported', async (t) => {
      const { contentType, body } = manyParts(HOSTILE_PARTS);
      const latencies: number[] = [];
      const ROUNDS = 5;
      for (let round = 0; round < ROUNDS; round++) {
        let pending = 8;
        const uploads = Array.from({ length: 8 }, async () => {
          const answer = await fetch(`${service.baseUrl}/dashboard/settings/logo`, {
            method: 'POST',
            headers: { 'content-type': contentType },
            body: new Uint8Array(body),
            redirect: 'manual',
          });
          await answer.arrayBuffer();
          pending--;
          return answer.status;
        });
        // /healthz asked again and again, one at a time, while the uploads are in flight.
        const probes = (async () => {
          while (pending > 0) {
            const started = performance.now();
            const health = await fetch(`${service.baseUrl}/healthz`);
            await health.arrayBuffer();
            latencies.push(performance.now() - started);
            assert.equal(health.status, 200);
          }
        })();
        assert.deepEqual(await Promise.all(uploads), Array(8).fill(303), 'every hostile upload is sent to sign in');
        await probes;
      }
      t.diagnostic(
        `/healthz under 8 concurrent signed-out uploads of ${HOSTILE_PARTS} parts (1 MiB), ${ROUNDS} rounds on ${engine}: ${latencies.length} probes, p50 ${ms(percentile(latencies, 50))} ms, p95 ${ms(percentile(latencies, 95))} ms, max ${ms(Math.max(...latencies))} ms`,
      );
      assert.ok(latencies.length > 0, 'the probes ran while the uploads were in flight');
    });
  });
}

test('the web scope refuses to register a form post that does not go through addFormRoute', async () => {
  const app = Fastify();
  app.register(async (web) => {
    guardWebScope(web);
    web.post('/unguarded', async () => 'done');
  });
  await assert.rejects(async () => {
    await app.ready();
  }, /a web form post must be added with addFormRoute/);
  await app.close();
});
