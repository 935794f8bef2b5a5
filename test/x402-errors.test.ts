import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Address } from 'viem';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import {
  authorization,
  base64Json,
  exactPayload,
  exactRequirements,
  newAccount,
  nowSeconds,
  paymentPayload,
  paymentSignatureHeader,
  signAuthorization,
  signedXPayment,
  xPaymentHeader,
} from '../src/testing/payer.ts';
import { createSession as createSessionWith, sessionRequest, x402Url } from '../src/testing/shop.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`x402 refusals and edge cases on ${engine}`, skip, () => {
    let env: PayingShop;
    let apiKey: string;
    let usdc: Address;
    let merchantWallet: Address;

    before(async () => {
      env = await startPayingShop(engine, {}, { name: 'Refusal shop' });
      ({ apiKey, merchantWallet } = env);
      usdc = env.sandbox.usdcAddress;
    });
    after(() => env?.stop());

    const api = (method: 'POST' | 'PUT', body: Record<string, unknown>, key = apiKey) => sessionRequest(env.baseUrl, key, method, body);

    /** A session of 0.05 USD unless `body` says otherwise. */
    const createSession = (body: Record<string, unknown> = {}, key = apiKey) => createSessionWith(env.baseUrl, key, { amount: 0.05, currency: 'USD', ...body });

    const payUrl = (sessionId: string, query = '') => x402Url(env.baseUrl, sessionId, query);
    const get = (sessionId: string, headers: Record<string, string> = {}, query = '') => fetch(payUrl(sessionId, query), { headers });

    /** Asks for the challenge (which stores the quote) and returns its offer. */
    const quote = (sessionId: string, query = '') => env.challenge(sessionId, query);

    const fundedPayer = () => env.fundedPayer();

    /** A session of 0.05 USD, a payer holding 1 USDC, and the session's quote. */
    async function readyToPay() {
      const { sessionId, payer, offer } = await env.readyToPay({ amount: 0.05, currency: 'USD' });
      return { sessionId, payer, value: offer.value, payTo: offer.payTo };
    }

    const paymentRows = async (sessionId: string) => env.service.context.db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).execute();
    const eventCount = async () =>
      Number(
        (
          await env.service.context.db
            .selectFrom('webhook_events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    /** Every 402 of spec E3: body, one `accepts` entry with every field, and the v2 PAYMENT-REQUIRED header. */
    async function assertChallenge(response: Response, error: string, sessionId: string, value: bigint) {
      const body = await response.json();
      assert.equal(response.status, 402, JSON.stringify(body));
      assert.equal(body.x402Version, 2);
      assert.equal(body.error, error, body.message);
      assert.equal(typeof body.message, 'string');
      assert.equal(body.accepts.length, 1);
      const [offer] = body.accepts;
      assert.deepEqual(Object.keys(offer).sort(), [
        'asset',
        'description',
        'extra',
        'maxAmountRequired',
        'maxTimeoutSeconds',
        'mimeType',
        'network',
        'payTo',
        'resource',
        'scheme',
      ]);
      assert.equal(offer.scheme, 'exact');
      assert.equal(offer.network, 'base');
      assert.equal(offer.asset.toLowerCase(), usdc.toLowerCase());
      assert.equal(offer.payTo.toLowerCase(), merchantWallet.toLowerCase());
      assert.equal(offer.maxAmountRequired, value.toString());
      assert.equal(offer.resource, `${env.service.config.baseUrl}/x402/session/${sessionId}`);
      assert.match(offer.resource, /^https?:\/\/[^/]+\/x402\/session\//);
      assert.match(offer.description, /Refusal shop/);
      assert.equal(offer.mimeType, 'application/json');
      assert.equal(offer.maxTimeoutSeconds, 60);
      assert.deepEqual(offer.extra, { name: 'USD Coin', version: '2' });

      const header = response.headers.get('payment-required');
      assert.ok(header, 'PAYMENT-REQUIRED header');
      const v2 = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
      assert.equal(v2.x402Version, 2);
      assert.equal(v2.resource.url, offer.resource);
      assert.equal(v2.accepts.length, 1);
      assert.equal(v2.accepts[0].network, 'eip155:8453');
      assert.equal(v2.accepts[0].amount, value.toString());
      assert.equal(v2.accepts[0].asset.toLowerCase(), usdc.toLowerCase());
      assert.equal(v2.accepts[0].payTo.toLowerCase(), merchantWallet.toLowerCase());
      assert.equal(v2.accepts[0].scheme, 'exact');
      return body;
    }

    async function refusedCount(reason: string): Promise<number> {
      const text = await (await fetch(`${env.baseUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`till_x402_proofs_refused_total{reason="${reason}"}`));
      return line ? Number(line.split(' ').at(-1)) : 0;
    }

    /** Sends a refused proof and checks the challenge, that nothing was recorded and nobody was charged. */
    async function assertRefused(sessionId: string, value: bigint, headers: Record<string, string>, error: string, payer?: Address) {
      const events = await eventCount();
      const balance = payer ? await env.sandbox.balanceOf(payer) : 0n;
      const counted = await refusedCount(error);
      await assertChallenge(await get(sessionId, headers), error, sessionId, value);
      assert.equal(await refusedCount(error), counted + 1, `till_x402_proofs_refused_total{reason="${error}"} counts the refusal`);
      assert.deepEqual(await paymentRows(sessionId), [], 'a refused proof writes no payment');
      assert.equal(await eventCount(), events, 'a refused proof writes no webhook event');
      if (payer) assert.equal(await env.sandbox.balanceOf(payer), balance);
    }

    test('payment_required: no proof gives the full challenge', async () => {
      const sessionId = await createSession();
      await assertChallenge(await get(sessionId), 'payment_required', sessionId, 50_000n);
    });

    test('amount_required and amount_below_minimum on an editable session: no offer, minAmount echoed', async () => {
      const sessionId = await createSession({ amount: 1, editable: true, minAmount: 0.02 });
      for (const [query, error] of [
        ['', 'amount_required'],
        ['?amount=0.01', 'amount_below_minimum'],
      ] as const) {
        const response = await get(sessionId, {}, query);
        const body = await response.json();
        assert.equal(response.status, 402);
        assert.equal(body.x402Version, 2);
        assert.equal(body.error, error);
        assert.deepEqual(body.accepts, []);
        assert.equal(body.minAmount, 0.02);
        assert.equal(response.headers.get('payment-required'), null);
      }
      await assertChallenge(await get(sessionId, {}, '?amount=0.02'), 'payment_required', sessionId, 20_000n);
    });

    test('amount_below_minimum for an amount the facilitator would refuse (under 0.001 USDC): no offer, the floor named, the facilitator never asked', async () => {
      const verifies = (await env.sandbox.faults.get()).stats.verifyRequests;
      // 1 KRW is about 0.00072 USDC: 720 base units, under the 1,000 the hosted facilitator settles.
      const sessionId = await createSession({ amount: 1, currency: 'KRW' });
      const response = await get(sessionId);
      const body = await response.json();
      assert.equal(response.status, 402, JSON.stringify(body));
      assert.equal(body.error, 'amount_below_minimum');
      assert.match(body.message, /0\.001 USDC \(1000 base units\)/);
      assert.equal(body.minUsdcAmount, '1000');
      assert.deepEqual(body.accepts, []);
      assert.equal(response.headers.get('payment-required'), null);
      // A proof for it anyway is refused the same way, before any facilitator call.
      const payer = await fundedPayer();
      const { header } = await signedXPayment(payer, usdc, merchantWallet, 720n);
      const paid = await get(sessionId, { 'x-payment': header });
      assert.equal((await paid.json()).error, 'amount_below_minimum');
      assert.equal((await env.sandbox.faults.get()).stats.verifyRequests, verifies, 'the facilitator was never asked');
      assert.deepEqual(await paymentRows(sessionId), []);
      // The hosted page says so too, and charges nothing.
      const page = await fetch(`${env.baseUrl}/checkout/pay?uid=${sessionId}`);
      assert.equal(page.status, 422);
      assert.match(await page.text(), /less than 0\.001 USDC, the smallest payment/);
    });

    test('the description offered is what the facilitator takes: at most 500 characters, cut between code points', async () => {
      const concept = `${'Gift 🎁 '.repeat(70)}end`.slice(0, 500);
      const sessionId = await createSession({ concept });
      const body = await (await get(sessionId)).json();
      const description: string = body.accepts[0].description;
      assert.ok(description.length <= 500, `${description.length} UTF-16 units`);
      assert.ok(Array.from(description).length <= 500);
      assert.ok(description.endsWith('…'));
      assert.ok(`Refusal shop: ${concept}`.startsWith(description.slice(0, -1)), 'a prefix of the full description');
      assert.doesNotMatch(description, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/, 'no half of a surrogate pair');
      const short = await (await get(await createSession({ concept: 'A short concept' }))).json();
      assert.equal(short.accepts[0].description, 'Refusal shop: A short concept', 'a description that fits is sent as it is');
    });

    test('invalid_payload: not base64, not JSON, fields missing', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const { auth, signature } = await signedXPayment(payer, usdc, payTo, value);
      const withoutNonce = exactPayload(signature, auth) as { authorization: Partial<ReturnType<typeof exactPayload>['authorization']> };
      delete withoutNonce.authorization.nonce;
      for (const header of [
        '%%% not base64 %%%',
        Buffer.from('{"x402Version":').toString('base64'),
        base64Json({ x402Version: 1, scheme: 'exact', network: 'base', payload: withoutNonce }),
        base64Json({ x402Version: 1, scheme: 'exact', network: 'base' }),
      ]) {
        await assertRefused(sessionId, value, { 'x-payment': header }, 'invalid_payload', payer.address);
      }
    });

    test('conflicting_payment_headers: X-PAYMENT and PAYMENT-SIGNATURE together', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const { auth, signature, header } = await signedXPayment(payer, usdc, payTo, value);
      await assertRefused(
        sessionId,
        value,
        { 'x-payment': header, 'payment-signature': paymentSignatureHeader(signature, auth, usdc) },
        'conflicting_payment_headers',
        payer.address,
      );
    });

    test('unsupported_scheme and wrong_network', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const { auth, signature } = await signedXPayment(payer, usdc, payTo, value);
      await assertRefused(sessionId, value, { 'x-payment': xPaymentHeader(signature, auth, { scheme: 'upto' }) }, 'unsupported_scheme', payer.address);
      await assertRefused(sessionId, value, { 'x-payment': xPaymentHeader(signature, auth, { network: 'base-sepolia' }) }, 'wrong_network', payer.address);
    });

    test('wrong_pay_to: the authorization pays someone else', async () => {
      const { sessionId, payer, value } = await readyToPay();
      const { header } = await signedXPayment(payer, usdc, newAccount().address, value);
      await assertRefused(sessionId, value, { 'x-payment': header }, 'wrong_pay_to', payer.address);
    });

    test('wrong_asset: a v2 proof whose accepted asset is another token', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const { auth, signature } = await signedXPayment(payer, usdc, payTo, value);
      await assertRefused(
        sessionId,
        value,
        { 'payment-signature': paymentSignatureHeader(signature, auth, newAccount().address) },
        'wrong_asset',
        payer.address,
      );
    });

    test('wrong_resource: a v2 proof naming another session as its resource; the offered resource is accepted', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const other = await createSession();
      const { auth, signature } = await signedXPayment(payer, usdc, payTo, value);
      await assertRefused(
        sessionId,
        value,
        { 'payment-signature': paymentSignatureHeader(signature, auth, usdc, `${env.baseUrl}/x402/session/${other}`) },
        'wrong_resource',
        payer.address,
      );
      const paid = await get(sessionId, {
        'payment-signature': paymentSignatureHeader(signature, auth, usdc, `${env.service.config.baseUrl}/x402/session/${sessionId}`),
      });
      assert.equal(paid.status, 200, await paid.clone().text());
    });

    test('amount_mismatch: the authorized value is not the quoted one', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      for (const wrong of [value - 1n, value + 1n]) {
        const { header } = await signedXPayment(payer, usdc, payTo, wrong);
        await assertRefused(sessionId, value, { 'x-payment': header }, 'amount_mismatch', payer.address);
      }
    });

    test('authorization_expired, authorization_too_long, authorization_not_yet_valid: the validity window', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const cases: [Partial<Parameters<typeof authorization>[3]>, string][] = [
        [{ validBefore: nowSeconds() - 1n }, 'authorization_expired'],
        [{ validBefore: nowSeconds() + 5n }, 'authorization_expired'],
        [{ validBefore: nowSeconds() + 700n }, 'authorization_too_long'],
        [{ validAfter: nowSeconds() + 120n }, 'authorization_not_yet_valid'],
      ];
      for (const [window, error] of cases) {
        const { header } = await signedXPayment(payer, usdc, payTo, value, window);
        await assertRefused(sessionId, value, { 'x-payment': header }, error, payer.address);
      }
    });

    test('invalid_signature: signed by another key, or a signed field tampered with', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const auth = authorization(payer.address, payTo, value);
      const forged = await signAuthorization(newAccount(), usdc, auth);
      await assertRefused(sessionId, value, { 'x-payment': xPaymentHeader(forged, auth) }, 'invalid_signature', payer.address);
      const genuine = await signAuthorization(payer, usdc, auth);
      await assertRefused(
        sessionId,
        value,
        { 'x-payment': xPaymentHeader(genuine, { ...auth, validBefore: auth.validBefore + 30n }) },
        'invalid_signature',
        payer.address,
      );
    });

    test('invalid_signature: a signature shorter than 65 bytes is refused before any facilitator call', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const verifies = (await env.sandbox.faults.get()).stats.verifyRequests;
      const auth = authorization(payer.address, payTo, value);
      const genuine = await signAuthorization(payer, usdc, auth);
      await assertRefused(
        sessionId,
        value,
        { 'x-payment': xPaymentHeader(genuine.slice(0, 2 + 128) as `0x${string}`, auth) },
        'invalid_signature',
        payer.address,
      );
      await assertRefused(sessionId, value, { 'x-payment': xPaymentHeader('0x1234', auth) }, 'invalid_signature', payer.address);
      assert.equal((await env.sandbox.faults.get()).stats.verifyRequests, verifies, 'the facilitator was never asked');
    });

    test('insufficient_funds: an unfunded payer', async () => {
      const sessionId = await createSession();
      const { value, payTo } = await quote(sessionId);
      const { header } = await signedXPayment(newAccount(), usdc, payTo, value);
      await assertRefused(sessionId, value, { 'x-payment': header }, 'insufficient_funds');
    });

    test('nonce_used: an authorization already settled on chain outside Till', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const { auth, signature, header } = await signedXPayment(payer, usdc, payTo, value);
      const requirements = exactRequirements(usdc, payTo, value);
      const settled = await fetch(`${env.sandbox.facilitatorUrl}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          x402Version: 2,
          paymentPayload: paymentPayload(requirements, signature, auth, { url: 'http://elsewhere.test/item', description: 'elsewhere' }),
          paymentRequirements: requirements,
        }),
      });
      assert.equal((await settled.json()).success, true);
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - value);
      await assertRefused(sessionId, value, { 'x-payment': header }, 'nonce_used', payer.address);
    });

    test('nonce_used: a nonce Till already claimed, replayed for another session or with another signature', async () => {
      const paidSession = await createSession();
      const payer = await fundedPayer();
      const first = await quote(paidSession);
      const paid = await signedXPayment(payer, usdc, first.payTo, first.value);
      assert.equal((await get(paidSession, { 'x-payment': paid.header })).status, 200);

      // The same (payer, nonce) signed again, for another session: refused before any facilitator call.
      const otherSession = await createSession();
      const other = await quote(otherSession);
      const replay = await signedXPayment(payer, usdc, other.payTo, other.value, { nonce: paid.auth.nonce });
      await assertRefused(otherSession, other.value, { 'x-payment': replay.header }, 'nonce_used', payer.address);
      // …and for the session it paid, with a different signature (another value): not its receipt.
      const sameSessionReplay = await signedXPayment(payer, usdc, first.payTo, first.value, {
        nonce: paid.auth.nonce,
        validBefore: paid.auth.validBefore + 1n,
      });
      const response = await get(paidSession, { 'x-payment': sameSessionReplay.header });
      assert.equal(response.status, 200, 'a settled TRANSIENT session answers its stored result to anyone');
      assert.equal((await paymentRows(paidSession)).length, 1);
    });

    test('session_changed: a proof for a quote made before the session was updated', async () => {
      const { sessionId, payer, value, payTo } = await readyToPay();
      const updated = await api('PUT', { sessionId, amount: 0.06 });
      assert.equal(updated.status, 200, await updated.clone().text());
      const { header } = await signedXPayment(payer, usdc, payTo, value);
      await assertRefused(sessionId, 60_000n, { 'x-payment': header }, 'session_changed', payer.address);
    });

    test('an update that leaves the USDC value unchanged keeps a proof signed before it payable', async () => {
      const changes: [string, Record<string, unknown>[]][] = [
        ['concept', [{ concept: 'Renamed' }]],
        ['orderId', [{ orderId: `renumbered-${Date.now()}` }]],
        ['successUrl', [{ successUrl: 'https://shop.example/thanks' }]],
        ['amount 0.05 → 0.06 → 0.05', [{ amount: 0.06 }, { amount: 0.05 }]],
      ];
      for (const [name, updates] of changes) {
        const { sessionId, payer, value, payTo } = await readyToPay();
        for (const update of updates) {
          const updated = await api('PUT', { sessionId, ...update });
          assert.equal(updated.status, 200, `${name}: ${await updated.clone().text()}`);
        }
        const { header } = await signedXPayment(payer, usdc, payTo, value);
        const paid = await get(sessionId, { 'x-payment': header });
        assert.equal(paid.status, 200, `${name}: ${await paid.clone().text()}`);
        assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - value, name);
      }
    });

    test('payment_in_progress: a second payer while the first settlement of a TRANSIENT session is held', async () => {
      const sessionId = await createSession({ orderType: 'TRANSIENT' });
      const [first, second] = [await fundedPayer(), await fundedPayer()];
      const { value, payTo } = await quote(sessionId);
      await env.sandbox.faults.set({ delaySettleMs: 4_000 });
      try {
        const firstPayment = get(sessionId, { 'x-payment': (await signedXPayment(first, usdc, payTo, value)).header });
        // The first payment is claimed (PENDING) before the second proof arrives.
        for (let tries = 0; (await paymentRows(sessionId)).length === 0; tries++) {
          assert.ok(tries < 200, 'the first payment was never claimed');
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        const busy = await get(sessionId, { 'x-payment': (await signedXPayment(second, usdc, payTo, value)).header });
        assert.ok(Number(busy.headers.get('retry-after')) > 0, 'Retry-After');
        // No offer while another payment is in flight: the buyer waits instead of signing again.
        assert.equal(busy.headers.get('payment-required'), null);
        const body = await busy.json();
        assert.equal(body.error, 'payment_in_progress');
        assert.deepEqual(body.accepts, []);
        assert.equal((await firstPayment).status, 200);
      } finally {
        await env.sandbox.faults.set({ delaySettleMs: 0 });
      }
      assert.equal(await env.sandbox.balanceOf(second.address), 1_000_000n);
      const rows = await paymentRows(sessionId);
      assert.deepEqual(
        rows.map((row) => [row.payer, row.status]),
        [[first.address.toLowerCase(), 'SUCCESS']],
      );
    });

    test('404 for an unknown session and for an expired one', async () => {
      const unknown = await get('ps_does_not_exist');
      assert.equal(unknown.status, 404);
      assert.equal((await unknown.json()).error.code, 'not_found');
      const sessionId = await createSession();
      assert.equal((await get(sessionId)).status, 402);
      await env.service.context.db
        .updateTable('payment_sessions')
        .set({ expires_at: Date.now() - 1_000 })
        .where('id', '=', sessionId)
        .execute();
      const expired = await get(sessionId);
      assert.equal(expired.status, 404);
      assert.equal(expired.headers.get('payment-required'), null);
    });

    test('422 when the merchant has no payout wallet', async () => {
      const { apiKey: walletless } = await env.service.merchant({ walletAddress: null });
      const sessionId = await createSession({}, walletless);
      const response = await get(sessionId);
      assert.equal(response.status, 422);
      const { error } = await response.json();
      assert.equal(error.code, 'no_pay_to');
      assert.match(error.message, /in the dashboard under Settings → Payout wallet \(\/dashboard\/settings\)/, 'points the merchant to the dashboard');
      assert.match(error.message, /till merchant set-wallet MERCHANT_ID 0x/, 'names the operator command too');
      assert.doesNotMatch(error.message, /mer_/, 'names no merchant id to the public');
    });

    test('400 for ?amount= on a fixed-amount session', async () => {
      const sessionId = await createSession();
      const response = await get(sessionId, {}, '?amount=0.05');
      assert.equal(response.status, 400);
      assert.equal((await response.json()).error.field, 'amount');
    });

    test('a settled TRANSIENT session answers 200 to another valid proof and charges nobody', async () => {
      const sessionId = await createSession({ orderType: 'TRANSIENT' });
      const [first, second] = [await fundedPayer(), await fundedPayer()];
      const { value, payTo } = await quote(sessionId);
      const paid = await get(sessionId, { 'x-payment': (await signedXPayment(first, usdc, payTo, value)).header });
      const paidBody = await paid.json();
      assert.equal(paid.status, 200, JSON.stringify(paidBody));
      const merchantBefore = await env.sandbox.balanceOf(merchantWallet);
      const again = await get(sessionId, { 'x-payment': (await signedXPayment(second, usdc, payTo, value)).header });
      assert.equal(again.status, 200);
      assert.deepEqual(await again.json(), paidBody);
      assert.ok(again.headers.get('x-payment-response'));
      assert.equal(await env.sandbox.balanceOf(second.address), 1_000_000n);
      assert.equal(await env.sandbox.balanceOf(merchantWallet), merchantBefore);
      assert.equal((await paymentRows(sessionId)).length, 1);
    });

    test('a STATIC session takes two payments, each its own order', async () => {
      const sessionId = await createSession({ orderType: 'STATIC' });
      const merchantBefore = await env.sandbox.balanceOf(merchantWallet);
      const ids = [];
      for (const payer of [await fundedPayer(), await fundedPayer()]) {
        const { value, payTo } = await quote(sessionId);
        const response = await get(sessionId, { 'x-payment': (await signedXPayment(payer, usdc, payTo, value)).header });
        const body = await response.json();
        assert.equal(response.status, 200, JSON.stringify(body));
        ids.push(body.paymentId);
      }
      assert.notEqual(ids[0], ids[1]);
      assert.match(ids[0], /^TX-/);
      assert.equal((await env.sandbox.balanceOf(merchantWallet)) - merchantBefore, 100_000n);
      assert.deepEqual(
        (await paymentRows(sessionId)).map((row) => row.status),
        ['SUCCESS', 'SUCCESS'],
      );
    });

    test('the alias path /checkout/v2/x402/session/{id} challenges and takes payment', async () => {
      const sessionId = await createSession();
      const alias = `${env.baseUrl}/checkout/v2/x402/session/${sessionId}`;
      await assertChallenge(await fetch(alias), 'payment_required', sessionId, 50_000n);
      const payer = await fundedPayer();
      const response = await fetch(alias, { headers: { 'x-payment': (await signedXPayment(payer, usdc, merchantWallet, 50_000n)).header } });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).paymentSessionId, sessionId);
      assert.equal(await env.sandbox.balanceOf(payer.address), 950_000n);
    });

    test('CORS: the preflight is answered and the x402 headers are exposed', async () => {
      const sessionId = await createSession();
      for (const url of [payUrl(sessionId), `${env.baseUrl}/checkout/v2/x402/session/${sessionId}`]) {
        const preflight = await fetch(url, {
          method: 'OPTIONS',
          headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-payment' },
        });
        assert.ok(preflight.status === 204 || preflight.status === 200, `preflight ${preflight.status}`);
        assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
        assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /GET/);
        assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-PAYMENT/i);
        assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /PAYMENT-SIGNATURE/i);
      }
      const challenge = await fetch(payUrl(sessionId), { headers: { origin: 'https://shop.example' } });
      assert.equal(challenge.status, 402);
      assert.equal(challenge.headers.get('access-control-allow-origin'), '*');
      assert.match(challenge.headers.get('access-control-expose-headers') ?? '', /PAYMENT-REQUIRED/i);
      assert.match(challenge.headers.get('access-control-expose-headers') ?? '', /PAYMENT-RESPONSE/i);
    });

    // Last: it moves the sandbox chain on by many blocks.
    test("a 60 s authorization (the clients' default) settles after a burst of sandbox blocks: chain time follows the wall clock", async () => {
      for (let i = 0; i < 70; i++) await env.sandbox.fund(newAccount().address, '0.01');
      const { sessionId, payer, value, payTo } = await readyToPay();
      const response = await get(sessionId, { 'x-payment': (await signedXPayment(payer, usdc, payTo, value)).header });
      assert.equal(response.status, 200, JSON.stringify(await response.json()));
      assert.equal(await env.sandbox.balanceOf(payer.address), 1_000_000n - value);
    });
  });
}
