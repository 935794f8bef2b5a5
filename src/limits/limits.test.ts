import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TillError } from '../common/errors.ts';
import { clearOfMinuteEnd } from '../testing/clock.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../testing/harness.ts';
import { clientFrom, type LoopbackClient } from '../testing/loopback-client.ts';
import { authorization, newAccount, signAuthorization, xPaymentHeader } from '../testing/payer.ts';
import { challenge, createSession, signedPayment, x402Url } from '../testing/shop.ts';
import { consume, type Limit, purgeEndedWindows } from './limits.ts';

const USDC = '0x2222222222222222222222222222222222222222';
const WALLET = '0x1111111111111111111111111111111111111111';
// A challenge and a refused proof never call the facilitator, so an address nothing listens on is enough;
// a proof that reaches it is answered 503.
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
      const limits = {
        TILL_X402_QUOTES_PER_MINUTE_PER_CLIENT: '4',
        TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '6',
        TILL_X402_PROOFS_PER_MINUTE_PER_IP: '12',
        TILL_X402_PROOFS_PER_MINUTE_PER_PAYER: '5',
        TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '3',
      };
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
    const clients: LoopbackClient[] = [];
    after(async () => {
      for (const client of clients) await client.close();
      await second?.stop();
      await first?.stop();
    });

    /** A client of its own address (127.0.1.1, 127.0.1.2 …), each test's clients apart from the others'. */
    const client = () => {
      const made = clientFrom(`127.0.1.${clients.length + 1}`);
      clients.push(made);
      return made;
    };
    /** Request `i` from `from` for the session, to the first instance or the second in turn: its status and refusal (a limit's by what it counts). */
    const send = async (from: LoopbackClient, i: number, sessionId: string, query = '', proof?: string) => {
      const response = await from.get(x402Url((i % 2 ? second : first).baseUrl, sessionId, query), proof ? { 'x-payment': proof } : {});
      const { error } = (await response.json()) as { error?: string | { code: string; message: string } };
      if (typeof error !== 'object') return `${response.status} ${error}`;
      return `${response.status} ${error.code === 'rate_limited' ? error.message.replace(/; retry after \d+ s$/, '') : error.code}`;
    };
    /** `from`'s own proof of `value`, or one in `from`'s name signed by another key. */
    const proofOf = async (payer: ReturnType<typeof newAccount>, to: `0x${string}`, value: bigint, signer = payer) => {
      const auth = authorization(payer.address, to, value);
      return xPaymentHeader(await signAuthorization(signer, USDC, auth), auth);
    };

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

    test("new quotes are counted per session and client, then for the session, once across both instances; a client's refused ones count nowhere else", async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD', editable: true, minAmount: 0.5, orderType: 'STATIC' });
      const [busy, other] = [client(), client()];
      await clearOfMinuteEnd();
      const asked: string[] = [];
      for (let i = 1; i <= 6; i++) asked.push(await send(busy, i, sessionId, `?amount=1.0${i}`));
      assert.deepEqual(asked, [...Array(4).fill('402 payment_required'), ...Array(2).fill('429 Too many new quotes for this session from this client')]);
      // The session has counted 4: another client gets 2 more, then the session's backstop refuses.
      const others: string[] = [];
      for (let i = 1; i <= 3; i++) others.push(await send(other, i, sessionId, `?amount=1.1${i}`));
      assert.deepEqual(others, ['402 payment_required', '402 payment_required', '429 Too many new quotes for this session']);
      assert.equal(await send(busy, 0, sessionId, '?amount=1.01'), '402 payment_required', 'a quote already made is reused, never refused');
    });

    test("one payer's proofs for a session are counted once across both instances; proofs in its name it did not sign count nowhere", async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD' });
      const offer = await challenge(first.baseUrl, sessionId);
      const payer = newAccount();
      const [forger, own] = [client(), client()];
      await clearOfMinuteEnd();
      // Signed for too little, so each is refused by the local checks, after being counted (or not).
      const forged: string[] = [];
      for (let i = 0; i < 10; i++) forged.push(await send(forger, i, sessionId, '', await proofOf(payer, offer.payTo, offer.value - 1n, newAccount())));
      assert.deepEqual(forged, Array(10).fill('402 amount_mismatch'));
      const statuses: string[] = [];
      for (let i = 0; i < 8; i++) statuses.push(await send(own, i, sessionId, '', await proofOf(payer, offer.payTo, offer.value - 1n)));
      assert.deepEqual(statuses, [...Array(5).fill('402 amount_mismatch'), ...Array(3).fill('429 Too many payment proofs from this payer for this session')]);
    });

    test("a proof over its client's limit counts nowhere else: not against its payer, not against the session", async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD' });
      const offer = await challenge(first.baseUrl, sessionId);
      const payer = newAccount();
      const [flooding, own] = [client(), client()];
      await clearOfMinuteEnd();
      for (let i = 0; i < 12; i++)
        assert.equal(await send(flooding, i, sessionId, '', await proofOf(newAccount(), offer.payTo, offer.value - 1n)), '402 amount_mismatch');
      for (let i = 0; i < 5; i++)
        assert.equal(await send(flooding, i, sessionId, '', await proofOf(payer, offer.payTo, offer.value)), '429 Too many payment proofs from this client');
      // The payer's budget (5) and the session's count of proofs sent to the facilitator (3) are untouched.
      const paid: string[] = [];
      for (let i = 0; i < 3; i++) paid.push(await send(own, i, sessionId, '', await proofOf(payer, offer.payTo, offer.value)));
      assert.deepEqual(paid, Array(3).fill('503 facilitator_unavailable'));
    });

    test("proofs that reach the facilitator are counted for the session; a signature not its payer's never reaches it; a smart wallet's counts per client", async () => {
      const sessionId = await createSession(first.baseUrl, apiKey, { amount: 1, currency: 'USD' });
      const offer = await challenge(first.baseUrl, sessionId);
      const [forger, wallets, otherWallets, buyers] = [client(), client(), client(), client()];
      await clearOfMinuteEnd();
      for (let i = 0; i < 10; i++)
        assert.equal(await send(forger, i, sessionId, '', await proofOf(newAccount(), offer.payTo, offer.value, newAccount())), '402 invalid_signature');
      // A signature longer than 65 bytes is checked by the facilitator only: one client's count for the session.
      const long = (i: number) => xPaymentHeader(`0x${'22'.repeat(100)}`, authorization(newAccount().address, offer.payTo, offer.value - BigInt(i + 1)));
      const walletAnswers: string[] = [];
      for (let i = 0; i < 6; i++) walletAnswers.push(await send(wallets, i, sessionId, '', long(i)));
      assert.deepEqual(walletAnswers, [...Array(5).fill('402 amount_mismatch'), '429 Too many smart-wallet payment proofs from this client for this session']);
      assert.equal(await send(otherWallets, 0, sessionId, '', long(0)), '402 amount_mismatch', 'another client has its own');
      const paid: string[] = [];
      for (let i = 0; i < 4; i++) paid.push(await send(buyers, i, sessionId, '', (await signedPayment(newAccount(), USDC, offer)).header));
      assert.deepEqual(paid, [...Array(3).fill('503 facilitator_unavailable'), '429 Too many payment proofs for this session']);
    });
  });
}
