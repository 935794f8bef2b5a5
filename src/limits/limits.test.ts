import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TillError } from '../common/errors.ts';
import { clearOfMinuteEnd } from '../testing/clock.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';
import { newAccount } from '../testing/payer.ts';
import { challenge, createSession, pay, signedPayment } from '../testing/shop.ts';
import { consume, type Limit, purgeEndedWindows } from './limits.ts';

const USDC = '0x2222222222222222222222222222222222222222';
const WALLET = '0x1111111111111111111111111111111111111111';
// A challenge and a refused proof never call the facilitator, so an address nothing listens on is enough.
const X402 = { TILL_SANDBOX: 'true', TILL_FACILITATOR_URL: 'http://127.0.0.1:9', TILL_USDC_ADDRESS: USDC };

const refusal = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (error instanceof TillError) return error;
    throw error;
  }
};

for (const { engine, skip } of engines) {
  describeOnEngine(`limits counted in the database on ${engine}`, skip, () => {
    let first: TestService & { baseUrl: string };
    let second: TestService & { baseUrl: string };
    let apiKey: string;
    before(async () => {
      const limits = { TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '4', TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '5', TILL_X402_PROOFS_PER_MINUTE_PER_IP: '1000' };
      first = await startListeningTestService(engine, { ...X402, ...limits });
      // A second instance on the same database and secret key, as behind a load balancer.
      second = await startListeningTestService(engine, {
        ...X402,
        ...limits,
        TILL_DATABASE_URL: first.config.databaseUrl,
        TILL_SECRET_KEY: first.config.secretKey.toString('hex'),
      });
      ({ apiKey } = await first.merchant({ walletAddress: WALLET }));
    });
    after(async () => {
      await second?.stop();
      await first?.stop();
    });

    test('a window counts hits, refuses past its points with the time left, and starts again at the next window', async () => {
      const db = first.context.db;
      const limit: Limit = { name: 'test_window', points: 2, windowMs: 10_000, what: 'test hits' };
      const start = 1_700_000_000_000; // a multiple of 10 s
      await consume(db, [{ limit, subject: 'a' }], start + 1000);
      await consume(db, [{ limit, subject: 'a' }], start + 2000);
      const refused = await refusal(consume(db, [{ limit, subject: 'a' }], start + 2500));
      assert.equal(refused?.code, 'rate_limited');
      assert.equal(refused?.status, 429);
      assert.equal(refused?.retryAfterSeconds, 8);
      assert.match(refused?.message ?? '', /Too many test hits/);
      // Another subject has its own count; the next window starts from nothing.
      await consume(db, [{ limit, subject: 'b' }], start + 2500);
      await consume(db, [{ limit, subject: 'a' }], start + 10_000);
      assert.equal(await purgeEndedWindows(db, start + 10_000), 2);
      assert.equal(await purgeEndedWindows(db, start + 10_000), 0);
    });

    test('several limits in one statement: the first one over refuses, and each is counted', async () => {
      const db = first.context.db;
      const loose: Limit = { name: 'test_loose', points: 10, windowMs: 60_000, what: 'loose hits' };
      const tight: Limit = { name: 'test_tight', points: 1, windowMs: 60_000, what: 'tight hits' };
      const now = 1_700_000_060_000;
      await consume(
        db,
        [
          { limit: loose, subject: 'x' },
          { limit: tight, subject: 'x' },
        ],
        now,
      );
      const refused = await refusal(
        consume(
          db,
          [
            { limit: loose, subject: 'x' },
            { limit: tight, subject: 'x' },
          ],
          now,
        ),
      );
      assert.match(refused?.message ?? '', /tight hits/);
      const rows = await db.selectFrom('rate_limit_windows').select(['limit_name', 'hits']).where('subject', '=', 'x').orderBy('limit_name').execute();
      assert.deepEqual(
        rows.map((row) => ({ ...row })),
        [
          { limit_name: 'test_loose', hits: 2 },
          { limit_name: 'test_tight', hits: 2 },
        ],
      );
    });

    test('racing hits are each counted once: none lost, none doubled', async () => {
      const limit: Limit = { name: 'test_race', points: 30, windowMs: 60_000, what: 'racing hits' };
      const now = 1_700_000_120_000;
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => refusal(consume((i % 2 ? second : first).context.db, [{ limit, subject: 'r' }], now))),
      );
      assert.equal(results.filter((r) => r === undefined).length, 30);
      assert.equal(results.filter((r) => r?.code === 'rate_limited').length, 10);
    });

    test('new quotes of a session are counted once across both instances', async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD', editable: true, minAmount: 0.5, orderType: 'STATIC' });
      await clearOfMinuteEnd();
      const ask = (i: number) => fetch(`${(i % 2 ? second : first).baseUrl}/x402/session/${sessionId}?amount=1.0${i}`);
      for (const i of [1, 2, 3, 4]) assert.equal((await ask(i)).status, 402, `quote ${i}`);
      for (const i of [5, 6]) {
        const refused = await ask(i);
        assert.equal(refused.status, 429);
        assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'rate_limited');
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      }
    });

    test('proofs for a session are counted once across both instances', async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD' });
      await clearOfMinuteEnd();
      const offer = await challenge(first.baseUrl, sessionId);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        // Signed for too little, so each is refused by the local checks, after being counted.
        const proof = await signedPayment(newAccount(), USDC, { ...offer, value: offer.value - 1n });
        statuses.push((await pay((i % 2 ? second : first).baseUrl, sessionId, proof.header)).status);
      }
      assert.deepEqual(statuses, [402, 402, 402, 402, 402, 429, 429, 429]);
    });
  });
}
