import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MAX_TIMEOUT_SECONDS } from '../common/network.ts';
import { clearOfMinuteEnd } from '../testing/clock.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { createSession } from '../testing/shop.ts';
import { findSessionToQuote, purgeOldQuotes } from './quotes.ts';

const WALLET = '0x1111111111111111111111111111111111111111';

for (const { engine, skip } of engines) {
  describeOnEngine(`stored quotes on ${engine}`, skip, () => {
    let service: TestService;
    let apiKey: string;
    let merchantId: string;
    before(async () => {
      // A challenge never calls the facilitator, so an address nothing listens on is enough here.
      service = await startTestService(engine, {
        TILL_SANDBOX: 'true',
        TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
        TILL_USDC_ADDRESS: '0x2222222222222222222222222222222222222222',
        TILL_X402_QUOTES_PER_MINUTE_PER_SESSION: '3',
      });
      ({ apiKey, merchantId } = await service.merchant({ walletAddress: WALLET }));
    });
    after(() => service?.stop());

    const newSession = (body: Record<string, unknown>) => createSession(service, apiKey, body);
    const challenge = (sessionId: string, amount?: string) =>
      service.app.inject({ method: 'GET', url: `/x402/session/${sessionId}${amount ? `?amount=${amount}` : ''}` });
    const quoteCount = async (sessionId: string) =>
      (await service.context.db.selectFrom('payment_quotes').select('id').where('session_id', '=', sessionId).execute()).length;

    test('new quotes per session are limited; a reused quote is not counted', async () => {
      const sessionId = await newSession({ amount: 1, currency: 'USD', editable: true, minAmount: 0.5, orderType: 'STATIC' });
      await clearOfMinuteEnd();
      for (const amount of ['1.01', '1.02', '1.03']) assert.equal((await challenge(sessionId, amount)).statusCode, 402);
      // The same amounts again reuse their quotes.
      for (const amount of ['1.01', '1.02', '1.03']) assert.equal((await challenge(sessionId, amount)).statusCode, 402);
      const refused = await challenge(sessionId, '1.04');
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().error.code, 'rate_limited');
      assert.match(refused.json().error.message, /new quotes for this session/);
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal(await quoteCount(sessionId), 3);
      // Another session has its own allowance.
      const other = await newSession({ amount: 2, currency: 'USD' });
      assert.equal((await challenge(other)).statusCode, 402);
    });

    test('the sweep purges quotes an hour past their end unless a payment points at them', async () => {
      const sessionId = await newSession({ amount: 3, currency: 'USD' });
      assert.equal((await challenge(sessionId)).statusCode, 402);
      const [quote] = await service.context.db.selectFrom('payment_quotes').selectAll().where('session_id', '=', sessionId).execute();
      assert.ok(quote);
      // Two copies of the quote, long expired: one kept alive by a payment, one unused.
      const old = quote.expires_at - 3 * 60 * 60 * 1000;
      const kept = { ...quote, id: `${quote.id}_paid`, expires_at: old };
      const dropped = { ...quote, id: `${quote.id}_old`, expires_at: old };
      await service.context.db.insertInto('payment_quotes').values([kept, dropped]).execute();
      await service.context.db
        .insertInto('payments')
        .values({
          id: 'pay_quote_test',
          mode: service.config.mode,
          session_id: sessionId,
          merchant_id: merchantId,
          quote_id: kept.id,
          status: 'FAILED',
          exclusive: 0,
          payer: WALLET,
          pay_to: WALLET,
          asset: quote.asset,
          value: quote.usdc_amount,
          nonce: `0x${'ab'.repeat(32)}`,
          valid_after: 0n,
          valid_before: 1n,
          signature: '0x00',
          amount_minor: quote.amount_minor,
          currency: quote.currency,
          rate: quote.rate,
          public_order_id: null,
          tx_hash: null,
          block_number: null,
          failure_reason: 'authorization_expired',
          settle_response: null,
          created_at: old,
          updated_at: old,
          settled_at: null,
          finalized_at: null,
        })
        .execute();
      assert.ok((await purgeOldQuotes(service.context.db, Date.now())) >= 1);
      const left = (await service.context.db.selectFrom('payment_quotes').select('id').where('session_id', '=', sessionId).execute())
        .map((row) => row.id)
        .sort();
      assert.deepEqual(left, [quote.id, kept.id].sort());
    });

    test("the challenge's read offers the latest quote on the session's terms while it stays payable for a whole maxTimeoutSeconds", async () => {
      const sessionId = await newSession({ amount: 4, currency: 'USD' });
      assert.equal((await challenge(sessionId)).statusCode, 402);
      const db = service.context.db;
      const [quote] = await db.selectFrom('payment_quotes').selectAll().where('session_id', '=', sessionId).execute();
      assert.ok(quote);
      const terms = (now: number) => ({ assets: { sandbox: quote.asset }, now });
      const offered = async (now: number) => (await findSessionToQuote(db, sessionId, terms(now)))?.reusable?.id;
      const lastReuse = quote.expires_at - MAX_TIMEOUT_SECONDS * 1000;
      assert.equal(await offered(lastReuse - 1), quote.id);
      assert.equal(await offered(lastReuse), undefined);
      // A later quote on the same terms wins; one for another token or amount is never offered.
      const later = { ...quote, id: `${quote.id}_later`, expires_at: quote.expires_at + 1000 };
      const otherAsset = { ...quote, id: `${quote.id}_asset`, asset: '0x3333333333333333333333333333333333333333', expires_at: quote.expires_at + 2000 };
      const otherAmount = { ...quote, id: `${quote.id}_amount`, amount_minor: quote.amount_minor + 1n, expires_at: quote.expires_at + 3000 };
      await db.insertInto('payment_quotes').values([later, otherAsset, otherAmount]).execute();
      assert.equal(await offered(lastReuse), later.id);
      assert.equal(await offered(lastReuse + 1000), undefined);
      // Past its reuse, the latest quote hides no older one: none is offered, and the challenge makes a new one.
      assert.equal(await offered(quote.expires_at), undefined);
      assert.equal((await findSessionToQuote(db, 'ps_unknown', terms(lastReuse)))?.session, undefined);
    });
  });
}
