// Amounts must read back exactly as the JSON numbers they were sent as. A four-decimal currency
// (CLF, UYW) has room under the 10^12 cap for amounts of 16 and 17 significant digits, more than a
// JSON number (an IEEE-754 double) holds; such an amount is refused wherever it enters, naming the
// field, and nothing is written. Every amount that is accepted reads back exactly.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SANDBOX_RATES, StaticRatesProvider } from '../money/rates.ts';
import { authorizedAgent, callMcpTool } from '../testing/agent.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { signedInMerchant } from '../testing/page-browser.ts';
import { readSession, sessionRequest } from '../testing/shop.ts';

const WALLET = `0x${'ab'.repeat(20)}`;
/** 900719925474.0993 CLF: 16 significant digits; the nearest double prints as 900719925474.0992. */
const INEXACT = '900719925474.0993';

for (const { engine, skip } of engines) {
  describeOnEngine(`amounts that read back exactly on ${engine}`, skip, () => {
    let service: TestService;
    let merchantId: string;
    let apiKey: string;
    before(async () => {
      service = await startTestService(
        engine,
        // x402 challenges need no facilitator call, so an address nothing listens on is enough.
        { TILL_SANDBOX: 'true', TILL_FACILITATOR_URL: 'http://127.0.0.1:9', TILL_USDC_ADDRESS: '0x2222222222222222222222222222222222222222' },
        // KWD at 10^7 USDC: its largest amounts are worth more USDC than a quote may ask.
        { rates: new StaticRatesProvider({ rates: { ...SANDBOX_RATES, CLF: '1', UYW: '0.025', KWD: '10000000' } }) },
      );
      ({ merchantId, apiKey } = await service.merchant({ walletAddress: WALLET }));
    });
    after(() => service?.stop());

    const create = (body: unknown) => sessionRequest(service, apiKey, 'POST', body);
    const update = (body: unknown) => sessionRequest(service, apiKey, 'PUT', body);
    const read = (sessionId: string) => readSession(service, apiKey, sessionId);
    const sessionsOf = async (merchant: string) =>
      (await service.context.db.selectFrom('payment_sessions').select('id').where('merchant_id', '=', merchant).execute()).length;
    const refusal = (response: { statusCode: number; json(): { error: { code: string; field?: string; message: string } } }) => {
      const error = response.json().error;
      return { status: response.statusCode, code: error?.code, field: error?.field };
    };

    describe('E1 and E2', () => {
      test('a CLF or UYW amount of more than 15 significant digits is a 400 naming amount, and no session is created', async () => {
        const before = await sessionsOf(merchantId);
        for (const text of [INEXACT, '999999999999.9999', '100000000000.0001', '123456789012.3457']) {
          for (const currency of ['CLF', 'UYW']) {
            const response = await create(`{"amount": ${text}, "currency": "${currency}"}`);
            // Were it accepted, the merchant's read of the session would be the proof that it cannot be shown.
            const readBack = response.statusCode === 201 ? (await read(response.json().sessionId)).statusCode : null;
            assert.deepEqual(
              { ...refusal(response), readBack },
              { status: 400, code: 'invalid_field', field: 'amount', readBack: null },
              `${text} ${currency}`,
            );
            assert.match(response.json().error.message, /amount has more than 15 significant digits/);
          }
        }
        const floor = await create(`{"amount": 1000000000000, "currency": "CLF", "editable": true, "minAmount": ${INEXACT}}`);
        assert.deepEqual(refusal(floor), { status: 400, code: 'invalid_field', field: 'minAmount' });
        assert.equal(await sessionsOf(merchantId), before, 'nothing was written');
      });

      test('every amount accepted reads back exactly, up to the 10^12 cap', async () => {
        for (const [text, expected] of [
          ['0.0001', 0.0001],
          ['99999999999.9999', 99999999999.9999],
          ['123456789012.345', 123456789012.345],
          ['900719925474.099', 900719925474.099],
          ['1000000000000', 1e12],
          ['1000000000000.0000', 1e12],
        ] as const) {
          const created = await create(`{"amount": ${text}, "currency": "CLF", "orderType": "STATIC", "editable": true, "minAmount": ${text}}`);
          assert.equal(created.statusCode, 201, text);
          const details = await read(created.json().sessionId);
          assert.equal(details.statusCode, 200, text);
          assert.equal(details.json().amount, expected, text);
          assert.equal(details.json().minAmount, expected, text);
        }
      });

      test('E2 refuses such an amount or minAmount with 400 naming the field, and the session is left as it was', async () => {
        const { sessionId } = (await create({ amount: 10, currency: 'CLF', orderType: 'STATIC' })).json();
        const before = (await read(sessionId)).json();
        const answers = [
          await update({ sessionId, amount: Number(INEXACT) }),
          await update(`{"sessionId": "${sessionId}", "amount": ${INEXACT}}`),
          await update(`{"sessionId": "${sessionId}", "editable": true, "amount": 1000000000000, "minAmount": ${INEXACT}}`),
          await update(`{"sessionId": "${sessionId}", "currency": "UYW", "amount": ${INEXACT}}`),
        ];
        const after = await read(sessionId);
        assert.deepEqual(
          { answers: answers.map(refusal), readBack: after.statusCode },
          {
            answers: [
              { status: 400, code: 'invalid_field', field: 'amount' },
              { status: 400, code: 'invalid_field', field: 'amount' },
              { status: 400, code: 'invalid_field', field: 'minAmount' },
              { status: 400, code: 'invalid_field', field: 'amount' },
            ],
            readBack: 200,
          },
        );
        assert.deepEqual(after.json(), before, 'nothing half-saved');
      });
    });

    test('the MCP tool create_payment_session refuses such an amount naming amount, and creates nothing', async () => {
      const { merchantId: agentMerchant, apiKey: agentKey } = await service.merchant({ walletAddress: WALLET });
      const { accessToken } = await authorizedAgent(service.context, agentMerchant, ['sessions:write']);
      for (const args of [
        { amount: Number(INEXACT), currency: 'CLF' },
        { amount: 123456789012.3457, currency: 'UYW' },
        { amount: 1e12, currency: 'CLF', editable: true, minAmount: Number(INEXACT) },
      ]) {
        const result = (await callMcpTool(service.app, accessToken, 'create_payment_session', args)).body.result;
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(result.content[0].text, args.minAmount ? /minAmount has more than 15 significant digits/ : /amount has more than 15 significant digits/);
      }
      assert.equal(await sessionsOf(agentMerchant), 0);
      const fine = (await callMcpTool(service.app, accessToken, 'create_payment_session', { amount: 123456789012.345, currency: 'CLF' })).body.result;
      assert.notEqual(fine.isError, true);
      assert.equal((await readSession(service, agentKey, fine.structuredContent.sessionId)).json().amount, 123456789012.345);
    });

    test('a payment link form refuses such an amount or minimum, naming the field, and saves nothing', async () => {
      const { browser, merchantId: linkMerchant } = await signedInMerchant(service, { walletAddress: WALLET });
      const csrf = await browser.csrf('/dashboard/links');
      for (const [fields, message] of [
        [{ amount: INEXACT }, /Amount: amount has more than 15 significant digits/],
        [{ amount: '1000000000000', editable: 'on', minAmount: INEXACT }, /Minimum amount: minAmount has more than 15 significant digits/],
      ] as const) {
        const answer = await browser.request('POST', '/dashboard/links', { csrf, currency: 'CLF', orderType: 'STATIC', ...fields });
        assert.equal(answer.statusCode, 400, JSON.stringify(fields));
        assert.match(answer.body, message);
        assert.match(answer.body, /aria-invalid="true"/);
      }
      assert.equal(await sessionsOf(linkMerchant), 0);

      const created = await browser.request('POST', '/dashboard/links', { csrf, currency: 'CLF', orderType: 'STATIC', amount: '10' });
      assert.equal(created.statusCode, 303);
      const id = /\/dashboard\/links\/(ps_[\w-]+)/.exec(String(created.headers.location))![1]!;
      const row = () => service.context.db.selectFrom('payment_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      const saved = await row();
      const edit = await browser.request('POST', `/dashboard/links/${id}`, {
        csrf: await browser.csrf(`/dashboard/links/${id}`),
        currency: 'CLF',
        amount: INEXACT,
      });
      assert.equal(edit.statusCode, 400);
      assert.match(edit.body, /Amount: amount has more than 15 significant digits/);
      assert.deepEqual(await row(), saved, 'nothing half-saved');
    });

    test("the buyer's ?amount= on an editable session gets the same bound: 400 naming amount", async () => {
      const { sessionId } = (await create({ amount: 10, currency: 'CLF', orderType: 'STATIC', editable: true, minAmount: 1 })).json();
      const challenge = (amount: string) => service.app.inject({ method: 'GET', url: `/x402/session/${sessionId}?amount=${amount}` });
      const refused = await challenge(INEXACT);
      assert.deepEqual(refusal(refused), { status: 400, code: 'invalid_field', field: 'amount' });
      assert.equal((await challenge('123456789012.345')).statusCode, 402, 'an amount of 15 significant digits is offered');
    });

    test('an amount worth more USDC than one payment may ask for at the current rate: its challenge is a 400 naming amount, never a 500', async () => {
      const { sessionId } = (await create({ amount: 1_000_000_000_000, currency: 'KWD' })).json();
      const challenge = await service.app.inject({ method: 'GET', url: `/x402/session/${sessionId}` });
      assert.deepEqual(refusal(challenge), { status: 400, code: 'invalid_field', field: 'amount' });
      const editable = (await create({ amount: 1, currency: 'KWD', orderType: 'STATIC', editable: true })).json();
      const buyerChosen = await service.app.inject({ method: 'GET', url: `/x402/session/${editable.sessionId}?amount=1000000000000` });
      assert.deepEqual(refusal(buyerChosen), { status: 400, code: 'invalid_field', field: 'amount' });
    });
  });
}
