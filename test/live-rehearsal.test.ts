// A rehearsal of live mode, followed as docs/operations.md "Going live" says: `till doctor`, the
// first merchant made with the CLI, `till serve` in live mode, and a buyer's x402 v2 client paying
// a live session over https, the payment confirmed from the chain.
//
// Stand-ins (src/testing/live-rehearsal.ts says more): Coinbase's facilitator and a Base node
// cannot be reached from here, so the sandbox chain runs as Base (chain id 8453, a token at Base's
// USDC address with USDC's EIP-712 domain) behind an https server that refuses any facilitator call
// without a valid CDP-style JWT, made by `@coinbase/x402` from a throwaway API key. TLS uses a
// throwaway CA that the service trusts through NODE_EXTRA_CA_CERTS. Everything else is real: the
// service's own processes, its database, the x402 client, signatures and transfers on the chain.
// The RPC answers eth_getLogs over 5 blocks at most, as free plans do on Base (QuickNode's 5,
// Alchemy's 10), refusing wider ranges in Alchemy's words.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { createPublicClient, getAddress, http, parseAbiItem } from 'viem';
import { BASE_USDC_ADDRESS } from '../src/common/network.ts';
import { runNodeScript, type ServingProcess, serveTill } from '../src/testing/child-process.ts';
import { createServiceStorage, temporaryDirectories } from '../src/testing/environment.ts';
import { describeOnEngine, engines } from '../src/testing/harness.ts';
import { type HttpsFront, type LiveRehearsal, liveServiceEnv, startLiveRehearsal } from '../src/testing/live-rehearsal.ts';
import { newAccount } from '../src/testing/payer.ts';
import { listen, standInRpc } from '../src/testing/stand-ins.ts';
import { waitFor } from '../src/testing/wait.ts';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const freshDir = temporaryDirectories('till-rehearsal-');
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
/** Blocks per eth_getLogs the rehearsal's RPC answers. */
const LOG_RANGE_LIMIT = 5;
/** How long a lost settle answer may take to be recorded: the reconcile grace below, then a few passes. */
const RECOVERY_BOUND_MS = 5_000 + 30_000;

for (const { engine, skip } of engines) {
  describeOnEngine(`live mode rehearsed on ${engine}`, skip, () => {
    let rehearsal: LiveRehearsal;
    let front: HttpsFront;
    let till: ServingProcess | undefined;
    let env: NodeJS.ProcessEnv;
    let drop: () => Promise<void>;
    let merchantId: string;
    let apiKey: string;
    const wallet = getAddress(newAccount().address);

    const cli = (args: string[], extra: Record<string, string> = {}) => runNodeScript(CLI, args, { env: { ...env, ...extra }, timeoutMs: 60_000 });
    const doctor = async (extra: Record<string, string> = {}) => {
      const run = await cli(['doctor', '--json'], extra);
      return {
        code: run.code,
        report: JSON.parse(run.stdout) as { ok: boolean; checks: { name: string; status: string; detail: string; fix?: string }[] },
        text: run.stdout,
      };
    };

    const api = (path: string, init: RequestInit = {}) =>
      rehearsal.fetch(`${front.url}${path}`, { ...init, headers: { 'X-SC-ApiKey': apiKey, 'content-type': 'application/json', ...init.headers } });
    const createSession = async (amount: number) => {
      const response = await api('/api/checkout/v2/payment_session', { method: 'POST', body: JSON.stringify({ amount, currency: 'USD' }) });
      assert.equal(response.status, 201);
      return ((await response.json()) as { sessionId: string }).sessionId;
    };
    const sessionStatus = async (sessionId: string) =>
      ((await (await api(`/api/checkout/v2/payment_session/${sessionId}`)).json()) as { status: string }).status;
    /** An x402 v2 client paying with `buyer`'s wallet. */
    const payingAs = (buyer: ReturnType<typeof newAccount>) =>
      wrapFetchWithPaymentFromConfig(rehearsal.fetch, {
        schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(buyer) }],
        spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: BASE_USDC_ADDRESS }] },
      } as never);

    before(async () => {
      rehearsal = await startLiveRehearsal({ dir: freshDir(), faultControls: true, blockIntervalMs: 400, rpcLogRangeLimit: LOG_RANGE_LIMIT });
      // Base has a long history: more blocks than the RPC answers at once before anything looks.
      await rehearsal.sandbox.chain.mine(4 * LOG_RANGE_LIMIT);
      const storage = await createServiceStorage(engine);
      drop = storage.drop;
      ({ env, front } = await liveServiceEnv(rehearsal, storage.settings));
    });
    after(async () => {
      await till?.stop();
      await rehearsal?.stop();
      await drop?.();
    });

    test('till doctor before the first merchant: every setting ✓, the migrations and the merchant still to do', async () => {
      const { code, report } = await doctor();
      assert.equal(code, 1);
      const failed = report.checks.filter((check) => check.status === 'failed').map((check) => check.name);
      assert.deepEqual(failed, ['database migrated']);
      assert.match(report.checks.find((check) => check.name === 'database migrated')!.fix!, /till migrate/);
      for (const name of [
        'facilitator supports exact on Base',
        'facilitator accepts the credentials',
        'RPC is Base mainnet',
        'RPC follows the chain',
        'RPC eth_getLogs range',
        "token's EIP-712 domain",
        'TILL_BASE_URL is https',
        'secret key present',
      ])
        assert.equal(report.checks.find((check) => check.name === name)?.status, 'ok', name);
      assert.equal(rehearsal.stats.refused, 0);
      assert.match(
        report.checks.find((check) => check.name === 'RPC eth_getLogs range')!.detail,
        new RegExp(`^${LOG_RANGE_LIMIT} blocks per request: the RPC refused 500`),
      );
    });

    test('the first merchant with the CLI, then till doctor passes', async () => {
      assert.equal((await cli(['migrate', '--json'])).code, 0);
      const noMerchant = await doctor();
      assert.equal(noMerchant.code, 1);
      assert.match(noMerchant.report.checks.find((check) => check.name === "merchants' payout wallets")!.detail, /no merchant yet/);
      const created = await cli(['merchant', 'create', '--name', 'Rehearsal shop', '--wallet', wallet, '--json']);
      assert.equal(created.code, 0, created.stderr);
      ({ merchantId, apiKey } = JSON.parse(created.stdout));
      assert.match(apiKey, /^sk_live_/);
      const ready = await doctor();
      assert.equal(ready.code, 0, ready.text);
      assert.ok(ready.report.ok);
      assert.equal(ready.report.checks.filter((check) => check.status === 'failed').length, 0);
      for (const name of ["merchants' payout wallets", 'no sandbox data in the way', 'webhook endpoints https'])
        assert.equal(ready.report.checks.find((check) => check.name === name)?.status, 'ok', name);
      const human = await cli(['doctor']);
      assert.equal(human.code, 0);
      assert.match(human.stdout, /^✓ mode: live: real USDC on Base through Coinbase's facilitator at https:\/\/localhost:\d+\/platform\/v2\/x402$/m);
      assert.match(human.stdout, /^✓ token's EIP-712 domain: "USD Coin", version "2" at 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913$/m);
      assert.match(human.stdout, /^Ready\.$/m);
    });

    test('till doctor names the broken piece: a wrong API key, an RPC of another chain, a plain http URL', async () => {
      const wrongKey = await doctor({ CDP_API_KEY_ID: rehearsal.wrongKey.id, CDP_API_KEY_SECRET: rehearsal.wrongKey.secret });
      assert.equal(wrongKey.code, 1);
      const credentials = wrongKey.report.checks.find((check) => check.name === 'facilitator accepts the credentials')!;
      assert.equal(credentials.status, 'failed');
      assert.match(credentials.detail, /refused the request 401 \(unauthorized: .*\) \[correlationId [^\]]+\]: the credentials were refused/);
      assert.match(credentials.fix!, /CDP_API_KEY_ID and CDP_API_KEY_SECRET/);

      // A well-formed secret of no key pair cannot sign at all: the fix is the secret, not the network.
      const unsigned = await doctor({ CDP_API_KEY_SECRET: Buffer.alloc(64, 7).toString('base64') });
      const cannotSign = unsigned.report.checks.find((check) => check.name === 'facilitator accepts the credentials')!;
      assert.equal(cannotSign.status, 'failed');
      assert.match(cannotSign.detail, /the API key cannot sign a request: .*Invalid keyData/);
      assert.match(cannotSign.fix!, /paste the whole secret of the CDP Secret API key into CDP_API_KEY_SECRET/);
      assert.doesNotMatch(cannotSign.fix!, /reachable/);

      // An ECDSA key, as PKCS#8 or as the SEC1 PEM the portal has handed out, is accepted as the Ed25519 one is.
      for (const secret of [rehearsal.ecKey.secret, rehearsal.ecKey.secretSec1]) {
        const ec = await doctor({ CDP_API_KEY_ID: rehearsal.ecKey.id, CDP_API_KEY_SECRET: secret });
        const accepted = ec.report.checks.find((check) => check.name === 'facilitator accepts the credentials')!;
        assert.equal(accepted.status, 'ok', accepted.detail);
        assert.match(accepted.detail, /answered: refused \(\w*insufficient\w*\) — authenticated, nothing paid/);
      }

      const sepolia: Server = standInRpc(84532, 'USD Coin');
      try {
        const otherChain = await doctor({ TILL_BASE_RPC_URL: await listen(sepolia), TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true' });
        assert.equal(otherChain.code, 1);
        const chain = otherChain.report.checks.find((check) => check.name === 'RPC is Base mainnet')!;
        assert.equal(chain.status, 'failed');
        assert.match(chain.detail, /answers chain id 84532, not Base mainnet \(8453\)/);
      } finally {
        sepolia.close();
      }

      const plain = await doctor({ TILL_BASE_RPC_URL: 'http://base-rpc.example' });
      assert.equal(plain.code, 1);
      assert.equal(plain.report.checks[0]!.name, 'settings');
      assert.match(plain.report.checks[0]!.detail, /TILL_BASE_RPC_URL: http:\/\/base-rpc\.example is plain http, refused in live mode/);
    });

    test('a live start with a refused API key is refused, naming the setting', async () => {
      const run = await cli(['serve'], { CDP_API_KEY_SECRET: rehearsal.wrongKey.secret });
      assert.equal(run.code, 2);
      assert.match(
        run.stderr,
        /Invalid setting TILL_FACILITATOR: live mode refused to start: facilitator supports exact on Base — GET https:\/\/localhost:\d+\/platform\/v2\/x402\/supported failed/,
      );
    });

    test('an x402 v2 client pays a live session over https; a lost settle answer is confirmed from the chain', async () => {
      const refusedBefore = rehearsal.stats.refusals.length;
      till = await serveTill(CLI, env);
      assert.match(till.stderr, /live mode without TILL_RATES_URL accepts USD sessions only/);
      assert.match(till.stdout, /Till is serving on https:\/\/localhost:\d+ \(live only, /);
      assert.doesNotMatch(till.stdout, /demo merchant/i);
      const buyer = newAccount();
      await rehearsal.sandbox.fund(buyer.address, '1');
      const pay = payingAs(buyer);

      // Paid at once: the facilitator verified and settled with a valid JWT each time.
      const first = await createSession(0.25);
      const paid = await pay(`${front.url}/x402/session/${first}`);
      const body = (await paid.json()) as { status: string; receipt: string };
      assert.equal(paid.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'SUCCESS');
      assert.equal(await rehearsal.sandbox.balanceOf(wallet), 250_000n);
      assert.match(body.receipt, /^https:\/\/basescan\.org\/tx\/0x[0-9a-f]{64}$/, "a live receipt links to Base's explorer");
      assert.ok(rehearsal.stats.facilitator.settle >= 1 && rehearsal.stats.facilitator.verify >= 1);
      assert.equal(rehearsal.stats.refusals.length, refusedBefore, 'every facilitator call carried a valid JWT');

      // The facilitator settles on chain but its answer is lost (502): the buyer is told the payment is
      // in progress, never asked again, and the reconciler records it from the chain.
      await rehearsal.sandbox.faults.set({ settleFault: 'bad_gateway' });
      const second = await createSession(0.5);
      const inProgress = await pay(`${front.url}/x402/session/${second}`);
      assert.equal(inProgress.status, 402);
      const answer = (await inProgress.json()) as { error: string; accepts: unknown[] };
      assert.equal(answer.error, 'payment_in_progress');
      assert.deepEqual(answer.accepts, []);
      await rehearsal.sandbox.faults.set({ settleFault: 'none' });
      await waitFor(async () => (await sessionStatus(second)) === 'SUCCESS', 'the reconciler recorded the payment from the chain', RECOVERY_BOUND_MS);
      assert.equal(await rehearsal.sandbox.balanceOf(wallet), 750_000n);

      // On the chain (read from the sandbox's own RPC, which answers any range): exactly one transfer per session to the payout wallet, from the buyer.
      const chain = createPublicClient({ transport: http(rehearsal.sandbox.rpcUrl) });
      const transfers = await chain.getLogs({ address: BASE_USDC_ADDRESS, event: TRANSFER, args: { to: wallet }, fromBlock: 0n });
      assert.deepEqual(
        transfers.map((log) => [log.args.from, log.args.value]),
        [
          [buyer.address, 250_000n],
          [buyer.address, 500_000n],
        ],
      );
      assert.equal(rehearsal.stats.refusals.length, refusedBefore);
      assert.ok(merchantId);
    });

    test(`a buyer whose settle answer was lost is paid through an RPC answering eth_getLogs over ${LOG_RANGE_LIMIT} blocks only`, async () => {
      assert.ok(till, 'till serve is running (the test before starts it)');
      const buyer = newAccount();
      await rehearsal.sandbox.fund(buyer.address, '1');
      const balanceBefore = await rehearsal.sandbox.balanceOf(wallet);
      // The facilitator settles on chain, then its answer never reaches Till.
      await rehearsal.sandbox.faults.set({ dropNextSettleResponse: true });
      const sessionId = await createSession(0.1);
      const inProgress = await payingAs(buyer)(`${front.url}/x402/session/${sessionId}`);
      assert.equal(inProgress.status, 402);
      assert.equal(((await inProgress.json()) as { error: string }).error, 'payment_in_progress');
      assert.equal(await rehearsal.sandbox.balanceOf(wallet), balanceBefore + 100_000n, 'the transfer is on chain');

      // The reconciler finds the authorization used and searches its events in ranges the RPC answers.
      await waitFor(async () => (await sessionStatus(sessionId)) === 'SUCCESS', 'the session SUCCESS, recorded from the chain', RECOVERY_BOUND_MS);
      assert.ok(rehearsal.stats.rpcLogsRefused > 0, 'the RPC refused wider ranges (once: the service keeps the range it answers)');
      assert.doesNotMatch(till.stdout, /could not reconcile payment yet/);
      const again = await payingAs(buyer)(`${front.url}/x402/session/${sessionId}`);
      assert.equal(again.status, 200, 'the paid session answers its result, never a new offer');
      assert.equal(await rehearsal.sandbox.balanceOf(wallet), balanceBefore + 100_000n, 'paid once');
    });
  });
}
