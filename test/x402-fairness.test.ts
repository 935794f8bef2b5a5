// One client at full rate never makes a session unpayable for another (docs/x402.md, "Rate limits"):
// a proof counts against a session only once its signature recovers to its payer, a request over the
// per-client limit counts nowhere else, and new quotes count per session and client. The clients are
// told apart as the service tells any client apart with no proxy in front: by the address each one
// connects from (the buyer is 127.0.0.3; each test's stranger has an address of its own, so one test's
// count is not another's). Real HTTP, a real sandbox chain mining every 2 s as `till sandbox` does, its
// facilitator, real signatures; the limits are the defaults a user starts with.
// TILL_FAIRNESS_SECONDS (30 unless set) is how long the full-rate test runs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Address, LocalAccount } from 'viem';
import { clearOfMinuteEnd } from '../src/testing/clock.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { clientFrom, type LoopbackClient } from '../src/testing/loopback-client.ts';
import { authorization, newAccount, signAuthorization, xPaymentHeader } from '../src/testing/payer.ts';
import { x402Url } from '../src/testing/shop.ts';

const SECONDS = Number(process.env.TILL_FAIRNESS_SECONDS ?? 30);
const BUYER_EVERY_MS = 10_000;
const ATTACKER_LANES = 4;

type Offer = { payTo: Address; value: bigint };
type Answer = { status: number; code: string; message: string; offer: Offer | undefined };

/** The status, the refusal code (x402 `error` or the API's `error.code`) and the offer of an answer. */
async function answerOf(response: Awaited<ReturnType<LoopbackClient['get']>>): Promise<Answer> {
  const body = (await response.json()) as {
    error?: string | { code: string; message: string };
    message?: string;
    accepts?: { payTo: Address; maxAmountRequired: string }[];
  };
  const [accepted] = body.accepts ?? [];
  const error = typeof body.error === 'object' ? body.error : { code: body.error ?? 'none', message: body.message ?? '' };
  return { status: response.status, ...error, offer: accepted && { payTo: accepted.payTo, value: BigInt(accepted.maxAmountRequired) } };
}

/** Kinds of proof a stranger can send for nothing: none of them is a payment its named payer signed with funds. */
const JUNK = ['garbage', 'impersonation', 'smart_wallet', 'unfunded'] as const;
type Junk = (typeof JUNK)[number];

/**
 * A junk proof for `offer`: a garbage signature naming a fresh address; a real signature of another
 * key naming `victim`; a long (smart-wallet) signature naming `victim`, which only the chain can check;
 * or a valid signature of a fresh key that holds no USDC.
 */
async function junkProof(kind: Junk, usdc: Address, offer: Offer, victim: Address): Promise<string> {
  const stranger = newAccount();
  switch (kind) {
    case 'garbage':
      return xPaymentHeader(`0x${'11'.repeat(65)}`, authorization(stranger.address, offer.payTo, offer.value));
    case 'impersonation': {
      const auth = authorization(victim, offer.payTo, offer.value);
      return xPaymentHeader(await signAuthorization(stranger, usdc, auth), auth);
    }
    case 'smart_wallet':
      return xPaymentHeader(`0x${'22'.repeat(200)}`, authorization(victim, offer.payTo, offer.value));
    case 'unfunded': {
      const auth = authorization(stranger.address, offer.payTo, offer.value);
      return xPaymentHeader(await signAuthorization(stranger, usdc, auth), auth);
    }
  }
}

/** `count` calls of `send`, `lanes` at a time. */
async function inLanes<T>(count: number, lanes: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await send(i);
      }
    }),
  );
  return results;
}

const tally = (answers: Answer[]) => {
  const counts = new Map<string, number>();
  for (const { status, code } of answers) counts.set(`${status} ${code}`, (counts.get(`${status} ${code}`) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));
};

/** The nearest-rank percentile of `values`. */
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * values.length) - 1)] ?? 0;

for (const { engine, skip } of engines) {
  describeOnEngine(`one client's junk never makes a session unpayable for another, on ${engine}`, skip, () => {
    let shop: PayingShop;
    let buyerClient: LoopbackClient;
    const clients: LoopbackClient[] = [];
    /** A stranger of its own for each test: 127.0.0.4, 127.0.0.5 … */
    const stranger = () => {
      const client = clientFrom(`127.0.0.${4 + clients.length}`);
      clients.push(client);
      return client;
    };
    before(async () => {
      shop = await startPayingShop(engine, {}, { blockIntervalMs: 2000 });
      buyerClient = clientFrom('127.0.0.3');
      clients.push(buyerClient);
    });
    after(async () => {
      for (const client of clients) await client.close();
      await shop?.stop();
    });

    const link = () => shop.createSession({ amount: 1, currency: 'USD', orderType: 'STATIC', editable: true, minAmount: 0.01, concept: 'Tip' });
    const ask = (client: LoopbackClient, sessionId: string, query: string, proof?: string) =>
      client.get(x402Url(shop.baseUrl, sessionId, query), proof ? { 'x-payment': proof } : {}).then(answerOf);
    /** Calls to the facilitator's verify so far, as the service's metric counts them. */
    const verifyCalls = async () =>
      (await shop.service.context.metrics.facilitatorCallSeconds.get()).values
        .filter((v) => v.metricName?.endsWith('_count') && v.labels.operation === 'verify')
        .reduce((sum, v) => sum + v.value, 0);
    /** The buyer asks for `amount`'s challenge, signs it and pays; the paid request is timed. */
    async function buyerPays(buyer: LocalAccount, sessionId: string, amount: string) {
      const challenged = await ask(buyerClient, sessionId, `?amount=${amount}`);
      assert.equal(challenged.status, 402, `the buyer's challenge: ${challenged.code} ${challenged.message}`);
      assert.ok(challenged.offer, `the buyer's challenge makes an offer (${challenged.code})`);
      const auth = authorization(buyer.address, challenged.offer.payTo, challenged.offer.value);
      const proof = xPaymentHeader(await signAuthorization(buyer, shop.sandbox.usdcAddress, auth), auth);
      const started = performance.now();
      const paid = await ask(buyerClient, sessionId, `?amount=${amount}`, proof);
      return { ...paid, ms: performance.now() - started };
    }

    test('620 junk proofs from one client (no funds, no valid signature) never reach the facilitator and leave the link payable by another', async () => {
      const sessionId = await link();
      const buyer = await shop.fundedPayer();
      const attacker = stranger();
      await clearOfMinuteEnd(25_000);
      const { offer } = await ask(attacker, sessionId, '?amount=0.50');
      assert.ok(offer);
      const verifiesBefore = await verifyCalls();
      const junk = await inLanes(620, 8, async () =>
        ask(attacker, sessionId, '?amount=0.50', await junkProof('garbage', shop.sandbox.usdcAddress, offer, buyer.address)),
      );
      const seen = tally(junk);
      const verifies = (await verifyCalls()) - verifiesBefore;

      const paid = await buyerPays(buyer, sessionId, '0.50');
      assert.equal(paid.status, 200, `${paid.code}: ${paid.message} (junk answers: ${JSON.stringify(seen)})`);
      assert.deepEqual(
        Object.keys(seen).filter((answer) => answer !== '402 invalid_signature' && answer !== '429 rate_limited'),
        [],
        JSON.stringify(seen),
      );
      for (const refused of junk.filter((answer) => answer.status === 429)) assert.match(refused.message, /payment proofs from this client/);
      assert.equal(verifies, 0, 'a signature that does not recover to its payer is refused before the facilitator');
    });

    test('125 new amounts asked by one client leave new quotes to another', async () => {
      const sessionId = await link();
      const buyer = await shop.fundedPayer();
      const attacker = stranger();
      await clearOfMinuteEnd(25_000);
      const asked = await inLanes(125, 4, (i) => ask(attacker, sessionId, `?amount=${(1 + i / 100).toFixed(2)}`));
      const seen = tally(asked);

      const paid = await buyerPays(buyer, sessionId, '0.77');
      assert.equal(paid.status, 200, `${paid.code}: ${paid.message}`);
      assert.deepEqual(
        Object.keys(seen).filter((answer) => answer !== '402 payment_required' && answer !== '429 rate_limited'),
        [],
        JSON.stringify(seen),
      );
      const refused = asked.filter((answer) => answer.status === 429);
      assert.ok(refused.length > 0, `one client's new quotes are limited: ${JSON.stringify(seen)}`);
      for (const answer of refused) assert.match(answer.message, /new quotes .*from this client/);
    });

    test(`one client sends junk proofs and new amounts at full rate for ${SECONDS} s while a funded buyer pays the same link every 10 s: every payment succeeds`, {
      timeout: (SECONDS + 300) * 1000,
    }, async (t) => {
      const sessionId = await link();
      const payments = Math.floor((SECONDS * 1000) / BUYER_EVERY_MS) + 1;
      const buyer = await shop.fundedPayer(String(payments));
      const usdc = shop.sandbox.usdcAddress;
      const attacker = stranger();

      let attacking = true;
      const junkAnswers: Answer[] = [];
      const quoteAnswers: Answer[] = [];
      let asked = 0;
      // Each lane asks for a new amount (a new quote while its budget lasts), then sends a junk proof for it.
      const attack = Promise.all(
        Array.from({ length: ATTACKER_LANES }, async (_, lane) => {
          let offer: Offer | undefined;
          let amount = '';
          for (let round = 0; attacking; round++) {
            const next = `${(2 + (asked++ % 100_000) / 100).toFixed(2)}`;
            const quoted = await ask(attacker, sessionId, `?amount=${next}`);
            quoteAnswers.push(quoted);
            if (quoted.offer) [offer, amount] = [quoted.offer, next];
            if (!offer) continue;
            const kind = JUNK[(lane + round) % JUNK.length]!;
            junkAnswers.push(await ask(attacker, sessionId, `?amount=${amount}`, await junkProof(kind, usdc, offer, buyer.address)));
          }
        }),
      );

      const started = Date.now();
      const paid: { status: number; code: string; message: string; ms: number }[] = [];
      try {
        for (let i = 0; i < payments; i++) {
          // The buyer's cadence: one payment every 10 s from the start.
          const due = started + i * BUYER_EVERY_MS - Date.now();
          if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
          paid.push(await buyerPays(buyer, sessionId, `0.${String(10 + i).padStart(2, '0')}`));
        }
      } finally {
        attacking = false;
        await attack;
      }

      const succeeded = paid.filter((p) => p.status === 200).length;
      const p95 = percentile(
        paid.map((p) => p.ms),
        95,
      );
      t.diagnostic(
        `${engine}: junk proofs sent ${junkAnswers.length} ${JSON.stringify(tally(junkAnswers))}; new amounts asked ${quoteAnswers.length} ${JSON.stringify(tally(quoteAnswers))}`,
      );
      t.diagnostic(
        `${engine}: buyer payments tried ${paid.length}, succeeded ${succeeded}; paid request p95 ${p95.toFixed(0)} ms (max ${Math.max(...paid.map((p) => p.ms)).toFixed(0)} ms)`,
      );

      assert.deepEqual(
        paid.filter((p) => p.status !== 200).map((p) => `${p.status} ${p.code}: ${p.message}`),
        [],
        'every one of the buyer’s payments succeeds',
      );
      assert.ok(junkAnswers.length > 0, 'the junk was sent');
      const strangerSaw = new Set([...junkAnswers, ...quoteAnswers].map((a) => a.status));
      assert.deepEqual(
        [...strangerSaw].filter((status) => status !== 402 && status !== 429),
        [],
        'the stranger gets refusals, never an error',
      );

      // What the merchant sees: the buyer's orders, and no refused attempt in the buyer's name.
      const { db } = shop.service.context;
      const orders = await db.selectFrom('payments').select(['payer', 'status']).where('session_id', '=', sessionId).execute();
      assert.deepEqual(
        orders.map((o) => `${o.payer} ${o.status}`),
        Array.from({ length: payments }, () => `${buyer.address.toLowerCase()} SUCCESS`),
      );
      const named = await db
        .selectFrom('payment_attempts')
        .select('reason')
        .where('session_id', '=', sessionId)
        .where('payer', '=', buyer.address.toLowerCase())
        .execute();
      assert.deepEqual(named, [], 'no refused attempt names the buyer, who signed none');
    });
  });
}
