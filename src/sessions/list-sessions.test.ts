// The session list as a merchant's server reads it: newest first, by cursor, filtered by status,
// orderId and creation time; each item exactly what the read of one session answers; only the
// caller's own sessions of the service's mode.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createClient } from '../oauth/clients.ts';
import { startSandbox } from '../sandbox/index.ts';
import { sandboxSettings } from '../testing/environment.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { newAccount } from '../testing/payer.ts';
import { challenge, createSession, fundedPayer, pay, readSession, SESSIONS_PATH, signedPayment } from '../testing/shop.ts';
import { archiveSession } from './sessions.ts';

type Listed = { sessionId: string; createdAt: string; status: string };
type Page = { sessions: Listed[]; nextCursor: string | null };

const DAY_MS = 86_400_000;

for (const { engine, skip } of engines) {
  describeOnEngine(`the session list on ${engine}`, skip, () => {
    let sandbox: Awaited<ReturnType<typeof startSandbox>>;
    let service: TestService;
    let baseUrl: string;
    /** The service's clock: the real time unless a test sets it. */
    let frozen: number | undefined;

    before(async () => {
      sandbox = await startSandbox({ faultControls: false, blockIntervalMs: 0 });
      service = await startTestService(engine, sandboxSettings(sandbox), { now: () => frozen ?? Date.now() });
      baseUrl = await service.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(async () => {
      await service?.stop();
      await sandbox?.stop();
    });

    const list = (query: string, headers: Record<string, string>) => service.app.inject({ method: 'GET', url: `${SESSIONS_PATH}?${query}`, headers });
    /** A page of the list as the key's merchant reads it; anything but 200 fails the test. */
    const page = async (apiKey: string, query = ''): Promise<Page> => {
      const answer = await list(query, { 'x-sc-apikey': apiKey });
      assert.equal(answer.statusCode, 200, answer.body);
      return answer.json();
    };
    const ids = (listed: Page) => listed.sessions.map((session) => session.sessionId);
    /** Every session the key's merchant lists with this filter, through every page. */
    const everything = async (apiKey: string, filter = ''): Promise<string[]> => {
      const all: string[] = [];
      for (let cursor: string | null = null; ; ) {
        const listed = await page(apiKey, `${filter}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        all.push(...ids(listed));
        cursor = listed.nextCursor;
        if (!cursor) return all;
      }
    };
    const refusal = async (apiKey: string, query: string) => {
      const answer = await list(query, { 'x-sc-apikey': apiKey });
      assert.equal(answer.statusCode, 400, `${query}: ${answer.body}`);
      return answer.json().error as { code: string; field: string };
    };
    /** A session created through E1 at `at` on the service's clock. */
    const createdAt = async (apiKey: string, at: number, body: Record<string, unknown> = {}) => {
      frozen = at;
      try {
        return await createSession(service, apiKey, { amount: 1, currency: 'USD', ...body });
      } finally {
        frozen = undefined;
      }
    };

    test('pages newest first with no repeat and no gap while sessions are created between pages; 20 a page by default', async () => {
      const { apiKey } = await service.merchant();
      // 22 sessions, three a millisecond: within one the id breaks the tie, and the first page ends inside one.
      const start = Date.now() - 60_000;
      const made: string[] = [];
      for (let i = 0; i < 22; i++) made.push(await createdAt(apiKey, start + Math.floor(i / 3)));

      const first = await page(apiKey);
      assert.equal(first.sessions.length, 20);
      assert.ok(first.nextCursor);

      const seen: Listed[] = [];
      const newer: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const listed: Page = await page(apiKey, `limit=8${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...listed.sessions);
        cursor = listed.nextCursor;
        pages++;
        // A new session between two pages: it is newer than the cursor, so no later page shows it.
        newer.push(await createdAt(apiKey, start + 1_000 + pages));
      } while (cursor);
      assert.equal(pages, 3);
      assert.equal(seen.length, 22);
      assert.deepEqual(new Set(seen.map((s) => s.sessionId)), new Set(made), 'every session once, none made meanwhile');
      const times = seen.map((s) => Date.parse(s.createdAt));
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
        'newest first',
      );
      // Read again from the top, the sessions made meanwhile come first.
      assert.deepEqual(ids(await page(apiKey, 'limit=3')), newer.reverse());
    });

    test('filters by status, orderId and creation time; each session listed is what its read answers', async () => {
      const { apiKey, merchantId } = await service.merchant({ walletAddress: newAccount().address });
      const base = Date.now();
      // Paid on the sandbox chain at the real time, so its authorization is valid.
      const paid = await createSession(service, apiKey, { amount: 0.01, currency: 'USD', orderId: 'paid' });
      const offer = await challenge(baseUrl, paid);
      const answer = await pay(baseUrl, paid, (await signedPayment(await fundedPayer(sandbox), sandbox.usdcAddress, offer)).header);
      assert.equal(answer.status, 200, await answer.text());
      const lapsed = await createdAt(apiKey, base + 60_000, { orderId: 'lapsed' });
      // Two days on, past the first one's deadline.
      const later = base + 2 * DAY_MS;
      const open = await createdAt(apiKey, later, { orderId: 'open' });
      const donations = await createdAt(apiKey, later + 1_000, { orderType: 'STATIC' });
      const archived = await createdAt(apiKey, later + 2_000);
      // Archived from the dashboard: no longer payable, so shown as expired.
      assert.ok(await archiveSession(service.context.db, service.config.mode, merchantId, archived, later + 3_000));

      frozen = later + 4_000;
      try {
        const at = async (id: string) => (await readSession(service, apiKey, id)).json().createdAt as string;
        const cases: [string, string[]][] = [
          ['', [archived, donations, open, lapsed, paid]],
          ['status=OPEN', [donations, open]],
          ['status=EXPIRED', [archived, lapsed]],
          ['status=SUCCESS', [paid]],
          ['status=SUCCESS,OPEN', [donations, open, paid]],
          ['orderId=open', [open]],
          ['orderId=nothing-like-it', []],
          [`createdFrom=${await at(open)}`, [archived, donations, open]],
          [`createdTo=${await at(open)}`, [lapsed, paid]],
          [`createdFrom=${await at(lapsed)}&createdTo=${await at(donations)}`, [open, lapsed]],
          [`status=OPEN&createdFrom=${await at(donations)}`, [donations]],
        ];
        for (const [query, expected] of cases) assert.deepEqual(ids(await page(apiKey, query)), expected, query);

        const listed = await page(apiKey);
        assert.deepEqual(
          listed.sessions.map((s) => s.status),
          ['EXPIRED', 'OPEN', 'OPEN', 'EXPIRED', 'SUCCESS'],
        );
        for (const session of listed.sessions) assert.deepEqual(session, (await readSession(service, apiKey, session.sessionId)).json());
        const [withPayment] = (await page(apiKey, 'status=SUCCESS')).sessions as (Listed & { payments: { status: string }[] })[];
        assert.deepEqual(
          withPayment?.payments.map((p) => p.status),
          ['SUCCESS'],
        );
      } finally {
        frozen = undefined;
      }
    });

    test('a bad or unknown parameter is a 400 naming it', async () => {
      const { apiKey } = await service.merchant();
      const cursor = (await page(apiKey, 'limit=1')).nextCursor;
      await createSession(service, apiKey, { amount: 1, currency: 'USD' });
      await createSession(service, apiKey, { amount: 1, currency: 'USD' });
      const valid = (await page(apiKey, 'limit=1')).nextCursor!;
      assert.equal(cursor, null, 'no next page of an empty list');
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=abc', 'limit'],
        ['limit=1.5', 'limit'],
        ['limit=5&limit=6', 'limit'],
        ['cursor=not-a-cursor', 'cursor'],
        ['cursor=', 'cursor'],
        ['cursor=%2B%2B%2B', 'cursor'],
        [`cursor=${valid}x`, 'cursor'],
        [`cursor=${Buffer.from('12.ps_x; drop').toString('base64url')}`, 'cursor'],
        ['status=PAID', 'status'],
        ['status=open', 'status'],
        ['status=OPEN,', 'status'],
        ['status=OPEN&status=SUCCESS', 'status'],
        ['orderId=', 'orderId'],
        ['createdFrom=yesterday', 'createdFrom'],
        ['createdFrom=2026-01-31', 'createdFrom'],
        ['createdTo=1700000000000', 'createdTo'],
        ['createdFrom=2026-02-01T00:00:00Z&createdTo=2026-01-01T00:00:00Z', 'createdTo'],
        ['page=2', 'page'],
      ]) {
        assert.equal((await refusal(apiKey, query!)).field, field, query);
      }
      assert.equal((await refusal(apiKey, 'page=2')).code, 'unknown_field');
      assert.equal((await page(apiKey, 'limit=100')).sessions.length, 2);
      assert.equal((await page(apiKey, `limit=1&cursor=${valid}`)).nextCursor, null);
    });

    test("another merchant's sessions and the other mode's are never listed", async () => {
      const mine = await service.merchant();
      const theirs = await service.merchant();
      const their = await createSession(service, theirs.apiKey, { amount: 3, currency: 'USD', orderId: 'shared-ref' });
      const my = [
        await createSession(service, mine.apiKey, { amount: 1, currency: 'USD', orderId: 'shared-ref' }),
        await createSession(service, mine.apiKey, { amount: 2, currency: 'USD' }),
      ];
      // A session of this merchant made by a live service on the same database.
      const live = await createSession(service, mine.apiKey, { amount: 4, currency: 'USD', orderId: 'live-ref' });
      await service.context.db.updateTable('payment_sessions').set({ mode: 'live' }).where('id', '=', live).execute();

      assert.deepEqual(await everything(mine.apiKey), my.toReversed());
      assert.deepEqual(await everything(mine.apiKey, 'orderId=shared-ref'), [my[0]]);
      assert.deepEqual(await everything(mine.apiKey, 'orderId=live-ref'), []);
      assert.deepEqual(await everything(theirs.apiKey), [their]);
      // A cursor of one merchant's list (after its newest session) only places the other's page: it shows the other's older session, never the first's.
      const cursor = (await page(mine.apiKey, 'limit=1')).nextCursor;
      assert.deepEqual(ids(await page(theirs.apiKey, `cursor=${cursor}`)), [their]);
    });

    test('a client-credentials bearer token lists as the API key does; no credentials is a 401', async () => {
      const { merchantId, apiKey } = await service.merchant();
      await createSession(service, apiKey, { amount: 1, currency: 'USD' });
      const client = await createClient(service.context.db, merchantId, 'sandbox');
      const token = await service.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/json' },
        payload: {
          grant_type: 'client_credentials',
          client_id: client.clientId,
          client_secret: client.clientSecret,
          audience: `${service.config.baseUrl}/checkout`,
        },
      });
      assert.equal(token.statusCode, 200, token.body);
      const bearer = await list('', { authorization: `Bearer ${token.json().access_token}` });
      assert.equal(bearer.statusCode, 200, bearer.body);
      assert.deepEqual(bearer.json(), await page(apiKey));
      assert.equal(bearer.json().sessions.length, 1);

      const wrong: Record<string, string>[] = [{}, { 'x-sc-apikey': 'sk_test_nope' }, { authorization: 'Bearer nope' }];
      for (const headers of wrong) {
        const refused = await list('', headers);
        assert.equal(refused.statusCode, 401, JSON.stringify(headers));
        assert.equal(refused.json().error.code, 'unauthorized');
      }
    });
  });
}
