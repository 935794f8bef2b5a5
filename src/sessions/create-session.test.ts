import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TillError } from '../common/errors.ts';
import { setAcceptedChains } from '../merchants/merchants.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../testing/harness.ts';
import { refusedWith } from '../testing/refusals.ts';
import { readSession, sessionRequest } from '../testing/shop.ts';
import { checkSessionChains, createPaymentSession } from './create-session.ts';
import { findSession } from './sessions.ts';

const WALLET = `0x${'ab'.repeat(20)}`;
const DESTINATION = '0x52908400098527886E0F7030069857D2E4169EE7';
const BASE_USDC = [{ chain: 'base', tokens: ['USDC'] }];

test('chains are checked against what the merchant accepts, naming the refused chain or token', () => {
  assert.deepEqual(checkSessionChains([{ name: 'Base', tokens: ['usdc'] }], BASE_USDC), { payTo: null });
  assert.deepEqual(checkSessionChains([{ name: 'base', tokens: ['USDC'], publicAddress: DESTINATION.toLowerCase() }], BASE_USDC), { payTo: DESTINATION });
  assert.throws(
    () => checkSessionChains([{ name: 'solana', tokens: ['USDC'] }], BASE_USDC),
    refusedWith('unsupported_chain', 'chains[0].name', /chains\[0\]\.name: chain "solana" is not accepted; accepted: base/),
  );
  assert.throws(
    () => checkSessionChains([{ name: 'base', tokens: ['USDC', 'DAI'] }], BASE_USDC),
    refusedWith('unsupported_token', 'chains[0].tokens[1]', /token "DAI" is not accepted on base; accepted: USDC/),
  );
  assert.throws(() => checkSessionChains([{ name: 'base', tokens: ['USDC'] }], []), refusedWith('unsupported_chain', 'chains[0].name', /accepted: none/));
  assert.throws(() => checkSessionChains([], BASE_USDC), refusedWith('invalid_field', 'chains'));
  assert.throws(() => checkSessionChains([{ name: 'base', tokens: [] }], BASE_USDC), refusedWith('invalid_field', 'chains[0].tokens'));
  assert.throws(
    () => checkSessionChains([{ name: 'base', tokens: ['USDC'], publicAddress: '0x1234' }], BASE_USDC),
    refusedWith('invalid_field', 'chains[0].publicAddress'),
  );
  assert.throws(
    () =>
      checkSessionChains(
        [
          { name: 'base', tokens: ['USDC'] },
          { name: 'base', tokens: ['USDC'] },
        ],
        BASE_USDC,
      ),
    refusedWith('invalid_field', 'chains[1].name'),
  );
});

for (const { engine, skip } of engines) {
  describeOnEngine(`session creation as a service on ${engine}`, skip, () => {
    let service: TestService;
    let merchantId: string;
    let apiKey: string;
    let bareMerchantId: string;
    before(async () => {
      service = await startTestService(engine);
      ({ merchantId, apiKey } = await service.merchant({ walletAddress: WALLET }));
      bareMerchantId = (await service.merchant({ name: 'No wallet' })).merchantId;
    });
    after(() => service?.stop());
    const create = (
      input: Parameters<typeof createPaymentSession>[2],
      id = merchantId,
      options: Parameters<typeof createPaymentSession>[3] = { createdVia: 'mcp', mode: 'sandbox' },
    ) => createPaymentSession(service.context, id, input, options);

    describe('the MCP tool input', () => {
      test('creates a session and answers its id and hosted page; chains default to what the merchant accepts', async () => {
        const created = await create({ amount: 12.5, currency: 'usd', orderType: 'STATIC', chains: [{ name: 'base', tokens: ['USDC'] }] });
        assert.match(created.sessionId, /^ps_/);
        assert.deepEqual(created, { sessionId: created.sessionId, redirectUrl: `http://till.test/checkout/pay?uid=${created.sessionId}` });
        const row = await findSession(service.context.db, created.sessionId);
        assert.equal(row?.amount_minor, 1250n);
        assert.equal(row?.currency, 'USD');
        assert.equal(row?.order_type, 'STATIC');
        assert.equal(row?.expires_at, null);
        assert.equal(row?.pay_to, null);
        const plain = await create({ amount: 3, currency: 'USD' });
        assert.equal((await findSession(service.context.db, plain.sessionId))?.order_type, 'TRANSIENT');
      });

      test('editable with minAmount is a buyer-chosen amount with a floor; minAmount on a fixed amount is refused, not ignored', async () => {
        const created = await create({ amount: 20, currency: 'USD', editable: true, minAmount: 5 });
        const row = await findSession(service.context.db, created.sessionId);
        assert.equal(row?.editable, 1);
        assert.equal(row?.min_amount_minor, 500n);
        await assert.rejects(
          create({ amount: 20, currency: 'USD', minAmount: 5 }),
          refusedWith('invalid_field', 'minAmount', /only allowed with editable: true/),
        );
        await assert.rejects(
          create({ amount: 20, currency: 'USD', editable: false, minAmount: 5 }),
          refusedWith('invalid_field', 'minAmount', /only allowed with editable: true/),
        );
        await assert.rejects(create({ amount: 20, currency: 'USD', editable: true, minAmount: 25 }), refusedWith('invalid_field', 'minAmount'));
      });

      test('amounts are exact: too many decimals, zero and non-finite numbers are refused by field', async () => {
        await assert.rejects(create({ amount: 1.005, currency: 'USD' }), refusedWith('invalid_field', 'amount', /decimals/));
        await assert.rejects(create({ amount: 0, currency: 'USD' }), refusedWith('invalid_field', 'amount'));
        await assert.rejects(create({ amount: Number.NaN, currency: 'USD' }), refusedWith('invalid_field', 'amount'));
        await assert.rejects(create({ amount: 1.5, currency: 'JPY' }), refusedWith('invalid_field', 'amount'));
        await assert.rejects(create({ amount: 1, currency: 'XXX' }), refusedWith('invalid_field', 'currency'));
      });

      test('an unsupported chain or token is refused by name, and nothing is created', async () => {
        const before = await service.context.db
          .selectFrom('payment_sessions')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        await assert.rejects(
          create({ amount: 1, currency: 'USD', chains: [{ name: 'polygon', tokens: ['USDC'] }] }),
          refusedWith('unsupported_chain', 'chains[0].name'),
        );
        await assert.rejects(
          create({ amount: 1, currency: 'USD', chains: [{ name: 'base', tokens: ['USDT'] }] }),
          refusedWith('unsupported_token', 'chains[0].tokens[0]'),
        );
        const afterCount = await service.context.db
          .selectFrom('payment_sessions')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(afterCount.n), Number(before.n));
      });

      test("publicAddress is stored as this session's payTo only, and makes it payable without a merchant wallet", async () => {
        const unpayable = await create({ amount: 1, currency: 'USD' }, bareMerchantId);
        assert.equal(unpayable.warnings?.[0]?.code, 'no_payout_wallet');
        const created = await create(
          { amount: 1, currency: 'USD', chains: [{ name: 'base', tokens: ['USDC'], publicAddress: DESTINATION.toLowerCase() }] },
          bareMerchantId,
        );
        assert.equal(created.warnings, undefined, 'a session with its own destination can be paid');
        assert.equal((await findSession(service.context.db, created.sessionId))?.pay_to, DESTINATION);
        // That x402 quotes and pays it is proven on the sandbox (test/session-pay-to.test.ts).
      });

      test('a chain the merchant no longer accepts is refused with the list it does accept', async () => {
        const { merchantId: id } = await service.merchant({ walletAddress: WALLET });
        await setAcceptedChains(service.context.db, id, [{ chain: 'base', tokens: ['USDC'] }]);
        await service.context.db.updateTable('merchants').set({ accepted_chains: '[]' }).where('id', '=', id).execute();
        await assert.rejects(
          create({ amount: 1, currency: 'USD', chains: [{ name: 'base', tokens: ['USDC'] }] }, id),
          refusedWith('unsupported_chain', 'chains[0].name', /accepted: none/),
        );
      });

      test('an idempotency key replays the first answer', async () => {
        const first = await create({ amount: 2, currency: 'USD' }, merchantId, { createdVia: 'mcp', mode: 'sandbox', idempotencyKey: 'tool-call-1' });
        const again = await create({ amount: 2, currency: 'USD' }, merchantId, { createdVia: 'mcp', mode: 'sandbox', idempotencyKey: 'tool-call-1' });
        assert.deepEqual(again, first);
        await assert.rejects(
          create({ amount: 3, currency: 'USD' }, merchantId, { createdVia: 'mcp', mode: 'sandbox', idempotencyKey: 'tool-call-1' }),
          (error: unknown) => {
            assert.equal((error as TillError).code, 'idempotency_key_reused');
            return true;
          },
        );
      });
    });

    describe('the payout wallet is never set over the payment API', () => {
      const fields = ['walletAddress', 'payoutAddress', 'payTo', 'publicAddress', 'wallet', 'pay_to', 'wallet_address', 'PayoutWallet'];

      test('E1 refuses a body with a wallet field, naming it, and creates nothing', async () => {
        const count = async () =>
          Number(
            (
              await service.context.db
                .selectFrom('payment_sessions')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          );
        const before = await count();
        for (const field of fields) {
          const response = await sessionRequest(service, apiKey, 'POST', { amount: 1, currency: 'USD', [field]: DESTINATION });
          assert.equal(response.statusCode, 400, field);
          const { error } = response.json();
          assert.equal(error.code, 'payout_wallet_not_settable');
          assert.equal(error.field, field);
          assert.match(error.message, new RegExp(`"${field}"`));
          assert.match(error.message, /in the dashboard under Settings → Payout wallet \(\/dashboard\/settings\), an operator with till merchant set-wallet$/);
        }
        assert.equal(await count(), before);
      });

      test('E2 refuses a body with a wallet field, naming it, and changes nothing', async () => {
        const { sessionId } = await create({ amount: 4, currency: 'USD' });
        for (const field of fields) {
          const response = await sessionRequest(service, apiKey, 'PUT', { sessionId, amount: 5, [field]: DESTINATION });
          assert.equal(response.statusCode, 400, field);
          assert.equal(response.json().error.code, 'payout_wallet_not_settable');
          assert.equal(response.json().error.field, field);
          assert.match(response.json().error.message, /Settings → Payout wallet/);
        }
        const row = await findSession(service.context.db, sessionId);
        assert.equal(row?.amount_minor, 400n);
        assert.equal(row?.pay_to, null);
        assert.equal(row?.version, 1);
        const read = (await readSession(service, apiKey, sessionId)).json();
        assert.equal(read.amount, 4);
      });

      test('E1 still refuses other unknown fields as unknown, and `chains` is not an E1 field', async () => {
        const response = await sessionRequest(service, apiKey, 'POST', {
          amount: 1,
          currency: 'USD',
          chains: [{ name: 'base', tokens: ['USDC'], publicAddress: DESTINATION }],
        });
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json().error, { code: 'unknown_field', message: 'Unknown field "chains" is not accepted', field: 'chains' });
      });
    });
  });
}
