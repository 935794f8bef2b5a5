import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import type { TestService } from '../../testing/harness.ts';
import { describeOnEngine, engines, startTestService } from '../../testing/harness.ts';
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

/** Form posts that are not pages' forms: the APIs (JSON, the OAuth token endpoint's form, MCP) and the sandbox. */
const NOT_WEB = /^\/(?:api\/|oauth\/(?:token|revoke)$|mcp$|sandbox\/|x402\/|checkout\/v2\/x402\/)/;

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
