// Refused payment attempts as the merchant sees them: each refused proof its payer signed on its link's
// page and with its session's orders (when, payer, amount, why, how often), bounded under a flood,
// purged by age, out of other merchants' sight, and never written for a successful payment or a plain
// challenge; a proof its named payer did not sign only adds to a count that names nobody, so no
// stranger can push a buyer's record off the page.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Address } from 'viem';
import { createUser } from '../accounts/users.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../testing/harness.ts';
import { Browser, signedInMerchant } from '../testing/page-browser.ts';
import { authorization, newAccount, nowSeconds, signAuthorization, signedXPayment, xPaymentHeader } from '../testing/payer.ts';
import { ATTEMPT_RETENTION_MS, ATTEMPTS_PER_SESSION, purgeOldAttempts, REFUSAL_SENTENCES } from './attempts.ts';

/** A proof naming `from`, who never signed it: its signature is no signature at all. */
const unsignedProof = (from: Address, to: Address, value: bigint, overrides: Parameters<typeof authorization>[3] = {}) =>
  xPaymentHeader(`0x${'11'.repeat(65)}`, authorization(from, to, value, overrides));

/** The note under the table of a page's refused attempts that counts the unsigned ones. */
const unsignedNote = (page: string) =>
  /<p id="attempts-unsigned">([\s\S]*?)<\/p>/
    .exec(page)?.[1]
    ?.replace(/<[^>]+>/g, '')
    .replace(/\s+/g, ' ');

/** The rows of the "Refused attempts" table of a page, each as its cells' text. */
function attemptRows(page: string): string[][] {
  const table = /<h2 id="attempts-heading">Refused attempts<\/h2>[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(page)?.[1];
  if (table === undefined) return [];
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map(([, row]) =>
    [...row!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map(([, cell]) =>
      cell!
        .replace(/<[^>]+title="([^"]+)"[^>]*>[^<]*/g, '$1')
        .replace(/<br>/g, ' ')
        .replace(/<[^>]+>/g, '')
        .replace(/&#39;|&rsquo;/g, '’')
        .replace(/\s+/g, ' ')
        .trim(),
    ),
  );
}

for (const { engine, skip } of engines) {
  describeOnEngine(`refused payment attempts on ${engine}`, skip, () => {
    let env: PayingShop;
    let browser: Browser;

    before(async () => {
      // The flood sends hundreds of proofs for one session within a minute: its limits are raised.
      env = await startPayingShop(engine, { TILL_X402_PROOFS_PER_MINUTE_PER_SESSION: '100000', TILL_X402_PROOFS_PER_MINUTE_PER_IP: '100000' });
      const email = `attempts-${engine}-${Date.now()}@shop.example`;
      await createUser(env.service.context.db, { merchantId: env.merchantId, email, password: 'correct horse battery staple' });
      browser = new Browser(env.service);
      assert.equal((await browser.signIn(email, 'correct horse battery staple')).statusCode, 303);
    });
    after(() => env?.stop());

    const linkPage = async (sessionId: string) => {
      const page = await browser.request('GET', `/dashboard/links/${sessionId}`);
      assert.equal(page.statusCode, 200);
      return page.body;
    };
    const refused = async (sessionId: string, header: string, error: string) => {
      const response = await env.pay(sessionId, header);
      const body = await response.json();
      assert.equal(response.status, 402, JSON.stringify(body));
      assert.equal(body.error, error, body.message);
    };
    const rowsOf = (sessionId: string) =>
      env.service.context.db.selectFrom('payment_attempts').selectAll().where('session_id', '=', sessionId).orderBy('last_seen_at', 'desc').execute();

    /** `payer`'s own signed X-PAYMENT of `value` to `to`. */
    const signed = async (payer: ReturnType<typeof newAccount>, to: Address, value: bigint, overrides: Parameters<typeof authorization>[3] = {}) =>
      (await signedXPayment(payer, env.sandbox.usdcAddress, to, value, overrides)).header;

    test("proofs refused for insufficient funds and a wrong amount are on the link's page and with its orders; a bad signature only counted", async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC', concept: 'Tea' });
      const offer = await env.challenge(sessionId);
      assert.deepEqual(attemptRows(await linkPage(sessionId)), [], 'a challenge is no attempt');

      const unfunded = newAccount();
      await refused(sessionId, await signed(unfunded, offer.payTo, offer.value), 'insufficient_funds');
      const wrongAmount = newAccount();
      await refused(sessionId, await signed(wrongAmount, offer.payTo, 40_000n), 'amount_mismatch');
      const claimed = newAccount();
      const forged = authorization(claimed.address, offer.payTo, offer.value);
      await refused(sessionId, xPaymentHeader(await signAuthorization(newAccount(), env.sandbox.usdcAddress, forged), forged), 'invalid_signature');
      // An unreadable header names no payer: it is not recorded.
      await refused(sessionId, Buffer.from('{"x402Version":1}').toString('base64'), 'invalid_payload');

      const expected = [
        [wrongAmount.address, '0.04 USDC', `${REFUSAL_SENTENCES.amount_mismatch} amount_mismatch`, '1'],
        [unfunded.address, '0.05 USDC', `${REFUSAL_SENTENCES.insufficient_funds} insufficient_funds`, '1'],
      ];
      const onLink = await linkPage(sessionId);
      assert.deepEqual(
        attemptRows(onLink).map(([, ...cells]) => cells),
        expected,
      );
      for (const [when] of attemptRows(onLink)) assert.match(when!, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
      assert.match(
        unsignedNote(onLink) ?? '',
        /^Not listed: 1 refused payment \(\d{4}-\d{2}-\d{2} [\d:]+ UTC\) whose signature was not that of the payer it named\./,
      );
      assert.doesNotMatch(onLink, new RegExp(claimed.address.slice(2, 8), 'i'), 'the forged proof’s payer is named nowhere');
      const orders = await browser.request('GET', `/dashboard/orders?session=${sessionId}`);
      assert.equal(orders.statusCode, 200);
      assert.deepEqual(
        attemptRows(orders.body).map(([, ...cells]) => cells),
        expected,
      );
      assert.equal(unsignedNote(orders.body), unsignedNote(onLink));
      assert.doesNotMatch((await browser.request('GET', '/dashboard/orders')).body, /Refused attempts/, 'only with one session’s orders');
    });

    test('a flood of 500 refused proofs signed by 25 payers leaves at most the last 20 rows, repeats counted', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const offer = await env.challenge(sessionId);
      const payers = Array.from({ length: 25 }, () => newAccount());
      for (const payer of payers) {
        for (let i = 0; i < 10; i++) await refused(sessionId, await signed(payer, offer.payTo, offer.value + 1n), 'amount_mismatch');
        for (let i = 0; i < 10; i++)
          await refused(sessionId, await signed(payer, offer.payTo, offer.value, { validBefore: nowSeconds() + 3600n }), 'authorization_too_long');
      }
      const rows = await rowsOf(sessionId);
      assert.equal(rows.length, ATTEMPTS_PER_SESSION);
      for (const row of rows) assert.equal(row.count, 10, 'each payer’s ten repeats of one refusal are one row');
      const last = payers.at(-1)!.address.toLowerCase();
      assert.deepEqual(
        rows
          .filter((row) => row.payer === last)
          .map((row) => row.reason)
          .sort(),
        ['amount_mismatch', 'authorization_too_long'],
      );
      assert.ok(!rows.some((row) => row.payer === payers[0]!.address.toLowerCase()), 'the oldest are gone');

      const shown = attemptRows(await linkPage(sessionId));
      assert.equal(shown.length, ATTEMPTS_PER_SESSION);
      for (const row of shown) assert.match(row[4]!, /^10 since \d{4}-\d{2}-\d{2} /);
      assert.equal(shown[0]![1], payers.at(-1)!.address);
    });

    test("25 proofs naming payers who never signed them, and a smart wallet's naming the buyer, leave a real buyer's refused attempt on the page", async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const offer = await env.challenge(sessionId);
      const buyer = newAccount();
      await refused(sessionId, await signed(buyer, offer.payTo, offer.value), 'insufficient_funds');
      const buyerRow = [buyer.address, '0.05 USDC', `${REFUSAL_SENTENCES.insufficient_funds} insufficient_funds`, '1'];

      for (let i = 0; i < 25; i++) {
        // A garbage signature, or another key's: refused before the facilitator either way.
        const named = newAccount().address;
        const header =
          i % 2
            ? unsignedProof(named, offer.payTo, offer.value)
            : xPaymentHeader(
                await signAuthorization(newAccount(), env.sandbox.usdcAddress, authorization(named, offer.payTo, offer.value)),
                authorization(named, offer.payTo, offer.value),
              );
        await refused(sessionId, header, 'invalid_signature');
      }
      // A smart wallet's signature (longer than 65 bytes) only the facilitator can check: it finds it invalid.
      await refused(sessionId, xPaymentHeader(`0x${'22'.repeat(120)}`, authorization(buyer.address, offer.payTo, offer.value)), 'invalid_signature');

      const page = await linkPage(sessionId);
      assert.deepEqual(
        attemptRows(page).map(([, ...cells]) => cells),
        [buyerRow],
      );
      assert.match(
        unsignedNote(page) ?? '',
        /^Not listed: 26 refused payments \(the last \d{4}-\d{2}-\d{2} [\d:]+ UTC\) whose signature was not that of the payer they named\./,
      );
      const rows = await rowsOf(sessionId);
      assert.equal(rows.length, 2, 'the buyer’s row and the one unsigned count');
    });

    test('the purge removes attempts not seen for the retention, and keeps the others', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const offer = await env.challenge(sessionId);
      const [old, recent] = [newAccount(), newAccount()];
      await refused(sessionId, await signed(old, offer.payTo, 1n), 'amount_mismatch');
      await refused(sessionId, await signed(recent, offer.payTo, 2n), 'amount_mismatch');
      await refused(sessionId, unsignedProof(newAccount().address, offer.payTo, 3n), 'amount_mismatch');
      const now = Date.now();
      await env.service.context.db
        .updateTable('payment_attempts')
        .set({ first_seen_at: now - ATTEMPT_RETENTION_MS - 60_000, last_seen_at: now - ATTEMPT_RETENTION_MS - 1000 })
        .where('session_id', '=', sessionId)
        .where('payer', 'in', [old.address.toLowerCase(), ''])
        .execute();
      assert.ok((await purgeOldAttempts(env.service.context.db, now)) >= 2);
      const page = await linkPage(sessionId);
      assert.deepEqual(
        attemptRows(page).map((row) => row[1]),
        [recent.address],
      );
      assert.equal(unsignedNote(page), undefined, 'the unsigned count is purged by age too');
    });

    test('another merchant sees none of them: the link is 404, its orders list shows no attempt', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const offer = await env.challenge(sessionId);
      await refused(sessionId, await signed(newAccount(), offer.payTo, 7n), 'amount_mismatch');
      await refused(sessionId, unsignedProof(newAccount().address, offer.payTo, 7n), 'amount_mismatch');
      assert.equal(attemptRows(await linkPage(sessionId)).length, 1);
      assert.ok(unsignedNote(await linkPage(sessionId)));

      const other = await signedInMerchant(env.service, { walletAddress: newAccount().address });
      assert.equal((await other.browser.request('GET', `/dashboard/links/${sessionId}`)).statusCode, 404);
      const orders = await other.browser.request('GET', `/dashboard/orders?session=${sessionId}`);
      assert.equal(orders.statusCode, 200);
      assert.doesNotMatch(orders.body, /Refused attempts/);
    });

    test('a successful payment records no attempt', async () => {
      const { sessionId, payer, offer } = await env.readyToPay({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const response = await env.pay(sessionId, (await env.signedPayment(payer, offer)).header);
      assert.equal(response.status, 200, await response.text());
      assert.deepEqual(await rowsOf(sessionId), []);
      const page = await linkPage(sessionId);
      assert.match(page, /TX-[0-9A-F]{32}/);
      assert.doesNotMatch(page, /Refused attempts/);
    });

    test('a refusal that cannot be recorded is still answered as the refusal', async () => {
      const sessionId = await env.createSession({ amount: 0.05, currency: 'USD', orderType: 'STATIC' });
      const offer = await env.challenge(sessionId);
      const { db } = env.service.context;
      await sql`ALTER TABLE payment_attempts RENAME TO payment_attempts_away`.execute(db);
      try {
        await refused(sessionId, unsignedProof(newAccount().address, offer.payTo, 3n), 'amount_mismatch');
      } finally {
        await sql`ALTER TABLE payment_attempts_away RENAME TO payment_attempts`.execute(db);
      }
      assert.deepEqual(await rowsOf(sessionId), []);
    });
  });
}
