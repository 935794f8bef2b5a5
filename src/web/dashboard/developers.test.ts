// Developers: the authorized coding agents (listed for the signed-in merchant only, revoked with the
// session's CSRF token, never another merchant's) and the audit log of their tool calls.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordToolCall } from '../../mcp/audit.ts';
import { activeGrant, addConsent, type Grant } from '../../oauth/grants.ts';
import type { Scope } from '../../oauth/scopes.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';

const AUTHORIZED_AT = Date.parse('2026-11-20T09:30:00Z');

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's developers page on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    const consent = (owner: { merchantId: string; userId: string }, clientName: string, scopes: Scope[]): Promise<Grant> =>
      service.context.db
        .transaction()
        .execute((trx) =>
          addConsent(
            trx,
            { ...owner, clientId: `https://agents.example/${encodeURIComponent(clientName)}/client.json`, clientName, scopes, mode: 'sandbox' },
            AUTHORIZED_AT,
          ),
        );
    const call = (grant: Grant, tool: string, outcome: 'ok' | 'refused' | 'failed', at: number, reason: string | null = null) =>
      recordToolCall(
        service.context.db,
        { grantId: grant.id, clientId: grant.clientId, merchantId: grant.merchantId, mode: grant.mode, tool, outcome, reason, arguments: { at } },
        at,
      );

    test('signed out, the page sends the browser to sign in; the old address moved here', async () => {
      const answer = await new Browser(service).request('GET', '/dashboard/developers');
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/sign-in?return_to=%2Fdashboard%2Fdevelopers');
      const old = await new Browser(service).request('GET', '/account/coding-agents');
      assert.equal(old.statusCode, 301);
      assert.equal(old.headers.location, '/dashboard/developers');
    });

    test('refund limits: a bad value is refused naming its field with nothing saved, both set are saved, both empty remove them', async () => {
      const owner = await signedInMerchant(service);
      const grant = await consent(owner, 'Refunding Agent', ['orders:read', 'refunds:write']);
      const post = async (form: Record<string, string>) =>
        owner.browser.request('POST', `/dashboard/developers/agents/${grant.id}/refund-limits`, {
          csrf: await owner.browser.csrf('/dashboard/developers'),
          ...form,
        });
      const saved = async () => (await activeGrant(service.context.db, grant.id))!.refundLimits;
      assert.match((await owner.browser.request('GET', '/dashboard/developers')).body, /No limits set: may not refund/);

      const refusals: [Record<string, string>, string, RegExp][] = [
        [{ perRefund: 'ten', perDay: '10' }, 'perRefund', /Per refund must be a finite decimal number/],
        [{ perRefund: '1', perDay: '-5' }, 'perDay', /Per 24 hours must not be negative/],
        [{ perRefund: '1.1234567', perDay: '5' }, 'perRefund', /Per refund has more decimals than the currency allows/],
        [{ perRefund: '1', perDay: '' }, 'perDay', /Per 24 hours is required when the other limit is set/],
      ];
      for (const [form, field, problem] of refusals) {
        const answer = await post(form);
        assert.equal(answer.statusCode, 400, JSON.stringify(form));
        assert.match(answer.body, problem);
        assert.match(answer.body, new RegExp(`name="${field}"[^>]*aria-invalid="true"`), `${field} is marked`);
        assert.deepEqual(await saved(), { perRefund: null, perDay: null }, 'nothing saved');
      }

      assert.equal((await post({ perRefund: '2.5', perDay: '10' })).statusCode, 303);
      assert.deepEqual(await saved(), { perRefund: 2_500_000n, perDay: 10_000_000n });
      assert.match((await owner.browser.request('GET', '/dashboard/developers?limits=1')).body, /Up to 2\.50 USDC a refund, 10\.00 USDC in 24 hours/);
      assert.equal((await post({ perRefund: '0', perDay: '0' })).statusCode, 303);
      assert.deepEqual(await saved(), { perRefund: 0n, perDay: 0n });
      assert.match((await owner.browser.request('GET', '/dashboard/developers')).body, /Limit 0: may not refund/);
      assert.equal((await post({ perRefund: '', perDay: '' })).statusCode, 303);
      assert.deepEqual(await saved(), { perRefund: null, perDay: null });
      // Another merchant cannot set them.
      const stranger = await signedInMerchant(service);
      const foreign = await stranger.browser.request('POST', `/dashboard/developers/agents/${grant.id}/refund-limits`, {
        csrf: await stranger.browser.csrf('/dashboard/developers'),
        perRefund: '100',
        perDay: '100',
      });
      assert.equal(foreign.statusCode, 404);
      assert.deepEqual(await saved(), { perRefund: null, perDay: null });
    });

    test('the list shows each grant: name, client id, scopes, dates, a revoke form', async () => {
      const owner = await signedInMerchant(service);
      const empty = await owner.browser.request('GET', '/dashboard/developers');
      assert.equal(empty.statusCode, 200);
      assert.match(empty.body, /No coding agent may use your account/);
      assert.match(empty.body, /No tool call yet/);

      const grant = await consent(owner, 'Acme <Coding> Agent', ['settings:read', 'keys:read']);
      const list = await owner.browser.request('GET', '/dashboard/developers');
      assert.equal(list.statusCode, 200);
      assert.equal(list.headers['cache-control'], 'no-store');
      assert.ok(list.body.includes('Acme &lt;Coding&gt; Agent'));
      assert.ok(list.body.includes(grant.clientId));
      assert.ok(list.body.includes('<code>settings:read</code>') && list.body.includes('<code>keys:read</code>'));
      assert.ok(!list.body.includes('<code>orders:read</code>'));
      assert.match(list.body, /2026-11-20 09:30:00 UTC/);
      assert.match(list.body, /Never/);
      assert.ok(list.body.includes(`action="/dashboard/developers/agents/${grant.id}/revoke"`));
    });

    test('revoking needs the session CSRF token and our Origin (403 otherwise); with them the grant is gone', async () => {
      const owner = await signedInMerchant(service);
      const grant = await consent(owner, 'Revocable Agent', ['orders:read']);
      await call(grant, 'list_orders', 'ok', AUTHORIZED_AT + 60_000);
      const url = `/dashboard/developers/agents/${grant.id}/revoke`;
      for (const form of [{}, { csrf: 'forged' }] as Record<string, string>[]) assert.equal((await owner.browser.request('POST', url, form)).statusCode, 403);
      const csrf = await owner.browser.csrf('/dashboard/developers');
      const crossSite = await service.app.inject({
        method: 'POST',
        url,
        headers: {
          cookie: [...owner.browser.cookies].map(([n, v]) => `${n}=${v}`).join('; '),
          origin: 'https://evil.example',
          'content-type': 'application/x-www-form-urlencoded',
        },
        payload: `csrf=${csrf}`,
      });
      assert.equal(crossSite.statusCode, 403);
      assert.ok(await activeGrant(service.context.db, grant.id));

      const revoked = await owner.browser.request('POST', url, { csrf });
      assert.equal(revoked.statusCode, 303);
      assert.equal(revoked.headers.location, '/dashboard/developers?revoked=1');
      assert.equal(await activeGrant(service.context.db, grant.id), undefined);
      const list = await owner.browser.request('GET', revoked.headers.location!);
      assert.match(list.body, /Access revoked/);
      assert.ok(!list.body.includes('Revocable Agent</strong>'));
      assert.ok(list.body.includes('<span class="note">Revoked:</span> Revocable Agent<br>'), 'its calls keep the agent’s name');
      assert.ok(list.body.includes(grant.clientId));
      assert.equal((await owner.browser.request('POST', url, { csrf })).statusCode, 404);
    });

    test('the audit log: newest first, filtered by agent, tool and outcome, paged; digests shortened', async () => {
      const owner = await signedInMerchant(service);
      const alpha = await consent(owner, 'Alpha Agent', ['orders:read']);
      const beta = await consent(owner, 'Beta Agent', ['orders:read']);
      const base = Date.parse('2026-11-21T10:00:00Z');
      for (let i = 0; i < 55; i++) await call(alpha, 'list_orders', 'ok', base + i * 1000);
      await call(beta, 'create_api_key', 'refused', base + 100_000, 'scope_missing');
      await call(beta, 'get_receipt', 'failed', base + 101_000, 'internal');
      const rows = (html: string) => [...html.matchAll(/<td data-label="Tool" class="nowrap"><code>([a-z_]+)<\/code>/g)].map((m) => m[1]);
      const page = await owner.browser.request('GET', '/dashboard/developers');
      assert.equal(page.statusCode, 200);
      assert.deepEqual(rows(page.body).slice(0, 3), ['get_receipt', 'create_api_key', 'list_orders']);
      assert.equal(rows(page.body).length, 50);
      assert.match(page.body, /Refused<br><span class="note">scope_missing<\/span>/);
      assert.match(page.body, /<code title="[0-9a-f]{64}">[0-9a-f]{12}…[0-9a-f]{4}<\/code>/);
      const older = /href="(\/dashboard\/developers\?after=[^"#]+)#audit"/.exec(page.body)?.[1];
      assert.ok(older);
      assert.deepEqual(rows((await owner.browser.request('GET', older.replaceAll('&amp;', '&'))).body), Array(7).fill('list_orders'));

      const filtered = async (query: string) => rows((await owner.browser.request('GET', `/dashboard/developers?${query}`)).body);
      assert.deepEqual(await filtered(`grant=${beta.id}`), ['get_receipt', 'create_api_key']);
      assert.deepEqual(await filtered('tool=create_api_key'), ['create_api_key']);
      assert.deepEqual(await filtered('outcome=failed'), ['get_receipt']);
      assert.deepEqual(await filtered(`grant=${alpha.id}&outcome=refused`), []);

      for (const [query, text] of [
        ['outcome=maybe', /Outcome must be Done, Refused or Failed/],
        ['tool=%3Cb%3E', /Tool must be a tool name/],
        ['grant=a%20b', /Agent must be one of your coding agents/],
        ['after=nope', /Page is not a page of this log/],
      ] as const) {
        const refused = await owner.browser.request('GET', `/dashboard/developers?${query}`);
        assert.equal(refused.statusCode, 400, query);
        assert.match(refused.body, text);
        if (!query.startsWith('after=')) assert.match(refused.body, /aria-invalid="true"/);
      }
    });

    test('another merchant’s user sees none of these grants or calls, and cannot revoke by id (404)', async () => {
      const owner = await signedInMerchant(service);
      const other = await signedInMerchant(service);
      const grant = await consent(owner, 'Private Agent', ['settings:read']);
      await call(grant, 'private_tool', 'ok', Date.now());
      const page = await other.browser.request('GET', '/dashboard/developers');
      assert.ok(!page.body.includes('Private Agent'));
      assert.ok(!page.body.includes('private_tool'));
      const byGrant = await other.browser.request('GET', `/dashboard/developers?grant=${grant.id}`);
      assert.ok(!byGrant.body.includes('private_tool'));
      const csrf = await other.browser.csrf('/dashboard/developers');
      const refused = await other.browser.request('POST', `/dashboard/developers/agents/${grant.id}/revoke`, { csrf });
      assert.equal(refused.statusCode, 404);
      assert.match(refused.body, /No such coding agent/);
      assert.ok(await activeGrant(service.context.db, grant.id));
    });
  });
}
