// What an operator sees when the Base RPC fails the reconciler's reads: a warning that names the RPC
// as http://host/… with what it answered, the same in the payment's last finding (`till payments
// pending`) and in `till doctor`, and never the provider's key that the RPC's URL carries. Once the
// RPC answers again, the payment is recorded from the chain.
//
// Stand-in: a provider's RPC endpoint at /v2/KEY (as Alchemy's https://base-mainnet.g.alchemy.com/v2/KEY)
// in front of the sandbox chain. While the key is refused it answers every request 401 "Must be
// authenticated!"; on a plan without eth_getLogs it answers that method -32601 as a node not serving
// it does; otherwise it forwards every request unchanged.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { persistentBuyer } from '../src/testing/buyer.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { sandboxSettings } from '../src/testing/environment.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { readSession } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const KEY = 'alch-7f3c9e1d2b4a';

/** The provider's endpoint for KEY, in front of `upstream` (set once the sandbox runs). */
async function keyedRpc() {
  const state = { upstream: '', plan: 'key refused' as 'key refused' | 'no eth_getLogs' | 'answering' };
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const call = JSON.parse(body) as { id?: unknown; method?: unknown };
    const refuse = (status: number, code: number, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id ?? null, error: { code, message } }));
    };
    if (req.url !== `/v2/${KEY}` || state.plan === 'key refused') return refuse(401, -32600, 'Must be authenticated!');
    if (state.plan === 'no eth_getLogs' && call.method === 'eth_getLogs') return refuse(200, -32601, 'the method eth_getLogs does not exist/is not available');
    const answer = await fetch(state.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { state, origin, url: `${origin}/v2/${KEY}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

for (const { engine, skip } of engines) {
  describeOnEngine(`a failing RPC never shows its key, on ${engine}`, skip, () => {
    let shop: PayingShop;
    let rpc: Awaited<ReturnType<typeof keyedRpc>>;
    /** Every line the service logged. */
    const logged: string[] = [];
    before(async () => {
      rpc = await keyedRpc();
      shop = await startPayingShop(
        engine,
        { TILL_BASE_RPC_URL: rpc.url, TILL_RECONCILE_INTERVAL_MS: '100', TILL_RECONCILE_GRACE_MS: '1500', TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '1000' },
        { faultControls: true, workers: true, log: pino({ level: 'info' }, { write: (line: string) => void logged.push(line) }) },
      );
      rpc.state.upstream = shop.sandbox.rpcUrl;
    });
    after(async () => {
      await shop?.stop();
      await rpc?.close();
    });

    const cli = (args: string[]) =>
      runNodeScript(CLI, args, {
        env: {
          PATH: process.env.PATH,
          ...sandboxSettings(shop.sandbox),
          TILL_DATABASE_URL: shop.service.config.databaseUrl,
          TILL_DATA_DIR: shop.service.config.dataDir,
          TILL_SECRET_KEY: shop.service.config.secretKey.toString('hex'),
          TILL_BASE_RPC_URL: rpc.url,
        },
        timeoutMs: 60_000,
      });

    test('a lost settle answer while the RPC fails: warnings, the finding and till doctor name the RPC as http://host/…, never its key; then SUCCESS', async () => {
      const redacted = `${rpc.origin}/…`;
      const sessionId = await shop.createSession({ amount: 0.05, currency: 'USD' });
      const payer = await shop.fundedPayer('1');
      await shop.sandbox.faults.set({ dropNextSettleResponse: true });
      const lost = await persistentBuyer({ baseUrl: shop.baseUrl, usdcAddress: shop.sandbox.usdcAddress }, sessionId, payer, { attempts: 1 });
      assert.equal(lost.last.body.error, 'payment_in_progress', 'the answer was lost: the buyer is told to wait');
      const warned = (message: string) => waitFor(() => logged.find((line) => line.includes(`"msg":"${message}"`)), `the warning "${message}"`);

      // The key is refused: not even the head can be read, and the reconciler's passes fail as a whole.
      const passFailed = await warned('reconciler pass failed');
      assert.ok(passFailed.includes(`eth_blockNumber at ${redacted} failed: `), passFailed);
      assert.match(passFailed, /HTTP 401, JSON-RPC error -32600\): Must be authenticated!/);
      const doctor = await cli(['doctor']);
      assert.match(
        doctor.stdout,
        /✗ RPC is Base mainnet: eth_chainId at http:\/\/127\.0\.0\.1:\d+\/… failed: .*HTTP 401.*Must be authenticated!\n {4}fix: the provider refused the request: check the key in TILL_BASE_RPC_URL/,
      );
      assert.match(doctor.stdout, /✗ token's EIP-712 domain: .*\n {4}fix: the provider refused the request: check the key in TILL_BASE_RPC_URL/);

      // A plan without eth_getLogs: the payment is looked at, and its search fails.
      rpc.state.plan = 'no eth_getLogs';
      const lookFailed = await warned('could not reconcile payment yet');
      assert.ok(lookFailed.includes(`at ${redacted} failed: `), lookFailed);
      assert.match(lookFailed, /JSON-RPC error -32601\): the method eth_getLogs does not exist/);
      const pending = await cli(['payments', 'pending', '--json']);
      assert.equal(pending.code, 0, pending.stderr);
      const finding = (JSON.parse(pending.stdout) as { payments: { sessionId: string; lastFinding: string }[] }).payments.find(
        (p) => p.sessionId === sessionId,
      )?.lastFinding;
      assert.match(finding ?? '', /^could not read the chain: eth_getLogs \[/);
      assert.ok(finding?.includes(redacted), finding);
      const noLogs = await cli(['doctor']);
      assert.match(noLogs.stdout, /✗ RPC eth_getLogs range: .*\n {4}fix: use a Base RPC \(or a plan\) that answers eth_getLogs/);

      for (const shown of [...logged, doctor.stdout, doctor.stderr, pending.stdout, pending.stderr, noLogs.stdout, noLogs.stderr])
        assert.ok(!shown.includes(KEY), `the key is shown: ${shown}`);

      // The RPC answers: the reconciler reads the chain and records the payment.
      rpc.state.plan = 'answering';
      await waitFor(async () => {
        const session = (await (await readSession(shop.baseUrl, shop.apiKey, sessionId)).json()) as { status: string };
        return session.status === 'SUCCESS';
      }, 'the session SUCCESS once the RPC answers');
      assert.ok(!logged.some((line) => line.includes(KEY)));
    });
  });
}
