// Test mode on a public test network instead of the sandbox (TILL_TEST_NETWORK=base-sepolia): what a
// test session's challenge, hosted page and local checks name is that network — the one the buyer's
// wallet is asked to use — while live sessions of the same deployment stay on Base. No Base Sepolia
// node or facilitator runs here: the facilitator URL is one that is never reached by these checks
// (a proof refused locally never reaches it), so what is tested is what the buyer is told and asked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getAddress } from 'viem';
import { loadConfig } from '../src/config.ts';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { describeOnEngine, engines, startListeningTestService, type TestService } from '../src/testing/harness.ts';
import { newAccount, randomNonce, signAuthorization } from '../src/testing/payer.ts';
import { createSession } from '../src/testing/shop.ts';

const SEPOLIA_USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const LIVE_USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

test('TILL_TEST_NETWORK names a test network only with a facilitator of its own, and never with Base’s real USDC', () => {
  const live = {
    TILL_DATA_DIR: '/tmp',
    TILL_FACILITATOR_URL: 'https://facilitator.example',
    TILL_BASE_RPC_URL: 'https://rpc.example',
    TILL_BASE_URL: 'https://pay.example',
  };
  assert.throws(() => loadConfig({ ...live, TILL_TEST_NETWORK: 'base-sepolia' }), /TILL_TEST_NETWORK: base-sepolia needs TILL_TEST_FACILITATOR_URL/);
  assert.throws(() => loadConfig({ ...live, TILL_TEST_NETWORK: 'ethereum' }), /Invalid setting TILL_TEST_NETWORK/);
  assert.throws(
    () => loadConfig({ ...live, TILL_TEST_NETWORK: 'base-sepolia', TILL_TEST_FACILITATOR_URL: 'https://x402.example', TILL_TEST_USDC_ADDRESS: LIVE_USDC }),
    /TILL_TEST_USDC_ADDRESS: is Base's real USDC/,
  );
  const config = loadConfig({
    ...live,
    TILL_TEST_NETWORK: 'base-sepolia',
    TILL_TEST_FACILITATOR_URL: 'https://x402.example',
    TILL_TEST_RPC_URL: 'https://sepolia.rpc.example',
    TILL_TEST_USDC_ADDRESS: SEPOLIA_USDC,
  });
  assert.deepEqual(config.modes, ['live', 'sandbox']);
  assert.equal(config.chains.sandbox?.network.v2, 'eip155:84532');
  assert.equal(config.chains.sandbox?.explorerTxUrl, 'https://sepolia.basescan.org/tx/{hash}');
  assert.equal(config.chains.live?.network.v2, 'eip155:8453');
});

for (const { engine, skip } of engines) {
  describeOnEngine(`test mode on Base Sepolia beside live on Base, on ${engine}`, skip, () => {
    let service: TestService & { baseUrl: string };
    let keys: { test: string; live: string };

    before(async () => {
      service = await startListeningTestService(engine, {
        TILL_FACILITATOR_URL: 'http://127.0.0.1:9/live-facilitator',
        TILL_TEST_NETWORK: 'base-sepolia',
        TILL_TEST_FACILITATOR_URL: 'http://127.0.0.1:9/sepolia-facilitator',
        TILL_TEST_RPC_URL: 'http://127.0.0.1:9/sepolia-rpc',
        TILL_TEST_USDC_ADDRESS: SEPOLIA_USDC,
      });
      const merchant = await service.merchant({ name: 'Sepolia shop', walletAddress: newAccount().address });
      keys = { live: merchant.apiKey, test: (await createApiKey(service.context.db, merchant.merchantId, 'test')).apiKey };
    });
    after(() => service?.stop());

    const challengeOf = async (sessionId: string) => {
      const response = await fetch(`${service.baseUrl}/x402/session/${sessionId}`);
      assert.equal(response.status, 402);
      const body = (await response.json()) as { accepts: { network: string; asset: string; payTo: string; maxAmountRequired: string }[] };
      const header = JSON.parse(Buffer.from(response.headers.get('payment-required') ?? '', 'base64').toString('utf8')) as { accepts: { network: string }[] };
      return { offer: body.accepts[0]!, v2Network: header.accepts[0]!.network };
    };

    test('a test session’s challenge names Base Sepolia in v1 and v2, with its token; a live one’s Base', async () => {
      const testSession = await createSession(service.baseUrl, keys.test, { amount: 1, currency: 'USD' });
      const liveSession = await createSession(service.baseUrl, keys.live, { amount: 1, currency: 'USD' });
      const test = await challengeOf(testSession);
      assert.deepEqual([test.offer.network, test.v2Network, getAddress(test.offer.asset)], ['base-sepolia', 'eip155:84532', SEPOLIA_USDC]);
      const live = await challengeOf(liveSession);
      assert.deepEqual([live.offer.network, live.v2Network, getAddress(live.offer.asset)], ['base', 'eip155:8453', LIVE_USDC]);
    });

    test('the test hosted page asks the wallet for Base Sepolia through its public RPC', async () => {
      const testSession = await createSession(service.baseUrl, keys.test, { amount: 2, currency: 'USD' });
      const page = await (await fetch(`${service.baseUrl}/checkout/pay?uid=${testSession}`)).text();
      assert.match(page, /data-chain-id="84532"/);
      assert.match(page, /data-rpc-url="https:\/\/sepolia\.base\.org"/);
      assert.match(page, /Base Sepolia \(chain id 84532\)/);
      assert.match(page, /Test payment — no real money/);
    });

    test('a proof for Base, or signed for Base’s chain id, is refused locally on a Base Sepolia session: nothing reaches a facilitator', async () => {
      const sessionId = await createSession(service.baseUrl, keys.test, { amount: 1, currency: 'USD' });
      const { offer } = await challengeOf(sessionId);
      const payer = newAccount();
      const nowS = BigInt(Math.floor(Date.now() / 1000));
      const authorization = {
        from: payer.address,
        to: getAddress(offer.payTo),
        value: BigInt(offer.maxAmountRequired),
        validAfter: 0n,
        validBefore: nowS + 300n,
        nonce: randomNonce(),
      };
      const send = async (network: string, chainId: number) => {
        const signature = await signAuthorization(payer, getAddress(offer.asset), authorization, chainId);
        const header = Buffer.from(
          JSON.stringify({
            x402Version: 1,
            scheme: 'exact',
            network,
            payload: {
              signature,
              authorization: { ...authorization, value: authorization.value.toString(), validAfter: '0', validBefore: authorization.validBefore.toString() },
            },
          }),
        ).toString('base64');
        const response = await fetch(`${service.baseUrl}/x402/session/${sessionId}`, { headers: { 'x-payment': header } });
        return { status: response.status, error: ((await response.json()) as { error?: string }).error };
      };
      assert.deepEqual(await send('base', 84532), { status: 402, error: 'wrong_network' });
      assert.deepEqual(await send('base-sepolia', 8453), { status: 402, error: 'invalid_signature' });
    });
  });
}
