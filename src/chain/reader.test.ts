// The chain reader against RPCs that answer as providers do: plans that cap eth_getLogs (each in its
// own words), failures that are not about the range, and URLs that carry the provider's key. Small
// JSON-RPC servers play the providers; the live rehearsal's RPC stand-in, in front of the sandbox
// chain, plays Alchemy's free plan over a real authorization used on chain.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { type Hex, pad, toEventSelector } from 'viem';
import { submitAuthorization } from '../testing/buyer.ts';
import { type LiveRehearsal, startLiveRehearsal } from '../testing/live-rehearsal.ts';
import { authorization, newAccount, randomNonce, signAuthorization } from '../testing/payer.ts';
import { logRangeRefusal } from '../testing/rpc-log-range.ts';
import { type Authorization, createChainReader, LOG_RANGE_BLOCKS } from './reader.ts';
import { ChainReadError, narrowerRange, rangeRefusal } from './rpc-errors.ts';

const ASSET = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const AUTHORIZATION_USED = toEventSelector('AuthorizationUsed(address,bytes32)');
const payer = newAccount().address;
const nonce = randomNonce();
const auth: Authorization = { asset: ASSET, payer, payTo: newAccount().address, value: 1n, nonce };

type Call = { id: number; method: string; params: [{ fromBlock: Hex; toBlock: Hex }] };
/** How a provider answers a call (an eth_getLogs over `blocks` blocks from `from`; other calls over none): undefined to answer it. */
type Refusal = (call: Call, from: bigint, blocks: bigint) => { status: number; body: unknown } | undefined;

/**
 * A JSON-RPC node of a provider whose plan answers eth_getLogs through `refuse`, with one
 * AuthorizationUsed log (of `auth`) in each block of `logBlocks`, at `path`. It records every
 * eth_getLogs range asked and whether it was answered.
 */
async function provider(refuse: Refusal, options: { head?: bigint; logBlocks?: bigint[]; path?: string } = {}) {
  const head = options.head ?? 1_000n;
  const logBlocks = options.logBlocks ?? [];
  const asked: { from: bigint; to: bigint; answered: boolean }[] = [];
  const server: Server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const call = JSON.parse(text) as Call;
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (options.path && new URL(req.url ?? '/', 'http://rpc').pathname !== options.path) return send(404, { error: 'no such endpoint' });
    const logs = call.method === 'eth_getLogs';
    const from = logs ? BigInt(call.params[0].fromBlock) : 0n;
    const to = logs ? BigInt(call.params[0].toBlock) : -1n;
    const refusal = refuse(call, from, to - from + 1n);
    if (logs) asked.push({ from, to, answered: !refusal });
    if (refusal) return send(refusal.status, refusal.body);
    if (call.method === 'eth_blockNumber') return send(200, { jsonrpc: '2.0', id: call.id, result: `0x${head.toString(16)}` });
    if (!logs) return send(200, { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: `the method ${call.method} does not exist` } });
    const found = logBlocks
      .filter((block) => block >= from && block <= to)
      .map((block) => ({
        address: ASSET.toLowerCase(),
        topics: [AUTHORIZATION_USED, pad(payer.toLowerCase() as Hex), nonce],
        data: '0x',
        blockNumber: `0x${block.toString(16)}`,
        transactionHash: pad(`0x${block.toString(16)}`),
        blockHash: pad('0x1'),
        logIndex: '0x0',
        transactionIndex: '0x0',
        removed: false,
      }));
    return send(200, { jsonrpc: '2.0', id: call.id, result: found });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${origin}${options.path ?? '/'}`, origin, asked, close: () => new Promise((resolve) => server.close(resolve)) };
}

const jsonRpcError = (call: Call, code: number, message: string, status = 200, data?: unknown) => ({
  status,
  body: { jsonrpc: '2.0', id: call.id, error: { code, message, ...(data === undefined ? {} : { data }) } },
});

/** Plans capped at `limit` blocks, refusing in each provider's words. */
const PLANS: Record<string, (limit: bigint) => Refusal> = {
  "Alchemy's free plan (-32600, naming a range that works)": (limit) => (call, from, blocks) =>
    blocks > limit ? { status: 200, body: logRangeRefusal(call.id, Number(limit), from) } : undefined,
  'QuickNode (HTTP 413, -32614 naming the limit)': (limit) => (call, _from, blocks) =>
    blocks > limit ? jsonRpcError(call, -32614, `eth_getLogs is limited to a ${limit} range`, 413) : undefined,
  'mainnet.base.org (naming no limit)': (limit) => (call, _from, blocks) => (blocks > limit ? jsonRpcError(call, -32000, 'block range too large') : undefined),
  'Infura (-32005, a result cap naming a range that works)': (limit) => (call, from, blocks) =>
    blocks > limit
      ? jsonRpcError(
          call,
          -32005,
          `query returned more than 10000 results. Try with this block range [0x${from.toString(16)}, 0x${(from + limit - 1n).toString(16)}].`,
          200,
          { from: `0x${from.toString(16)}`, to: `0x${(from + limit - 1n).toString(16)}`, limit: 10000 },
        )
      : undefined,
};

describe('eth_getLogs over the range the RPC answers', () => {
  for (const [plan, refusing] of Object.entries(PLANS)) {
    test(`${plan}: every block is searched, each log found once, and the range is kept for the next search`, async () => {
      const logBlocks = [0n, 4n, 5n, 99n, 100n, 101n, 250n, 499n, 500n, 777n];
      const rpc = await provider(refusing(5n), { logBlocks });
      try {
        const reader = createChainReader(rpc.url);
        assert.equal(reader.logRange(), LOG_RANGE_BLOCKS);
        const events = await reader.authorizationEvents(auth, 0n, 800n);
        assert.deepEqual(
          events.map((event) => [event.kind, event.blockNumber]),
          logBlocks.map((block) => ['used', block]),
        );
        const answered = rpc.asked.filter((range) => range.answered);
        assert.ok(
          answered.every((range) => range.to - range.from + 1n <= 5n),
          'no range wider than the plan was answered',
        );
        // The answered ranges cover [0, 800] with no gap and no overlap.
        let next = 0n;
        for (const range of answered) {
          assert.equal(range.from, next, `the search goes on from block ${next}`);
          next = range.to + 1n;
        }
        assert.equal(next, 801n);
        const learned = reader.logRange();
        assert.ok(learned >= 1n && learned <= 5n, `kept ${learned} blocks per request`);

        const refusedBefore = rpc.asked.filter((range) => !range.answered).length;
        assert.equal((await reader.authorizationEvents(auth, 100n, 130n)).length, 2);
        assert.equal(rpc.asked.filter((range) => !range.answered).length, refusedBefore, 'the next search asks no refused range again');
      } finally {
        await rpc.close();
      }
    });
  }

  test('a named range is taken at once; a refusal that names none halves the range', async () => {
    const alchemy = await provider(PLANS["Alchemy's free plan (-32600, naming a range that works)"]!(10n));
    const base = await provider(PLANS['mainnet.base.org (naming no limit)']!(10n));
    try {
      const named = createChainReader(alchemy.url);
      await named.authorizationEvents(auth, 0n, 999n);
      assert.equal(named.logRange(), 10n);
      assert.equal(alchemy.asked.filter((range) => !range.answered).length, 1, 'one refusal, then the range it named');
      const halved = createChainReader(base.url);
      await halved.authorizationEvents(auth, 0n, 999n);
      assert.equal(halved.logRange(), 7n, '500 → 250 → 125 → 62 → 31 → 15 → 7');
    } finally {
      await Promise.all([alchemy.close(), base.close()]);
    }
  });

  test('probeLogRange reports the range the RPC answers over its newest blocks', async () => {
    const rpc = await provider(PLANS['QuickNode (HTTP 413, -32614 naming the limit)']!(5n), { head: 30_000_000n });
    try {
      assert.equal(await createChainReader(rpc.url).probeLogRange(ASSET), 5n);
      assert.equal(rpc.asked[0]!.to, 30_000_000n);
      assert.equal(rpc.asked[0]!.from, 30_000_000n - LOG_RANGE_BLOCKS + 1n);
    } finally {
      await rpc.close();
    }
  });

  test('an RPC that refuses even one block fails the search, naming the RPC and its answer', async () => {
    const rpc = await provider(PLANS['QuickNode (HTTP 413, -32614 naming the limit)']!(0n));
    try {
      const reader = createChainReader(rpc.url);
      await assert.rejects(reader.authorizationEvents(auth, 0n, 800n), (error: ChainReadError) => {
        assert.ok(error instanceof ChainReadError);
        assert.equal(error.code, -32614);
        assert.match(
          error.message,
          /^eth_getLogs \[0, 0\] at http:\/\/127\.0\.0\.1:\d+ failed: .*\(HTTP 413, JSON-RPC error -32614\): eth_getLogs is limited to a 0 range/,
        );
        return true;
      });
      await assert.rejects(reader.probeLogRange(ASSET), ChainReadError);
    } finally {
      await rpc.close();
    }
  });

  test('a failure that is not about the range stops the search: no block is skipped, the range is kept', async () => {
    let calls = 0;
    // From the second request on, it fails as a provider out of requests does (HTTP 429).
    const rpc = await provider((call) =>
      call.method === 'eth_getLogs' && ++calls >= 2
        ? jsonRpcError(call, -32005, 'Your app has exceeded its compute units per second capacity', 429)
        : undefined,
    );
    try {
      const reader = createChainReader(rpc.url);
      await assert.rejects(reader.authorizationEvents(auth, 0n, 2_000n), (error: ChainReadError) => {
        assert.ok(error instanceof ChainReadError);
        assert.match(error.message, /^eth_getLogs \[500, 999\] at .* \(HTTP 429, JSON-RPC error -32005\): Your app has exceeded/);
        return true;
      });
      assert.equal(reader.logRange(), LOG_RANGE_BLOCKS);
    } finally {
      await rpc.close();
    }
  });

  test('refusals in the words of each provider are told apart from other failures', () => {
    const refusals: [string, bigint | undefined][] = [
      ['You can make eth_getLogs requests with up to a 500 block range. Based on your parameters, this block range should work: [0x1be4213, 0x1be4406]', 500n],
      [
        'Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range. Based on your parameters, this block range should work: [0x10, 0x19]',
        10n,
      ],
      [
        'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response.',
        undefined,
      ],
      ['query returned more than 10000 results. Try with this block range [0xBDE5F8, 0xBDE6F7].', 256n],
      ['eth_getLogs is limited to a 10,000 range', 10_000n],
      ['eth_getLogs is limited to a 5 range', 5n],
      ['range 1000000 exceeds limit of 10000', 10_000n],
      ['exceed maximum block range: 50000', 50_000n],
      ['query exceeds max block range 100000', 100_000n],
      ['ranges over 10000 blocks are not supported on freetier', 10_000n],
      ['please limit the query to at most 1000 blocks', 1_000n],
      ['Maximum allowed number of requested blocks is 2000', 2_000n],
      ['block range is too wide (maximum 1024)', 1_024n],
      ['requested too many blocks from 0 to 16777216, maximum is set to 2048', 2_048n],
      ['Max range: 800', 800n],
      ['block range too large', undefined],
      ['Block range is too large', undefined],
      ['Block range limit exceeded.', undefined],
      ['logs matched by query exceeds limit of 10000', undefined],
    ];
    for (const [words, blocks] of refusals) assert.deepEqual(rangeRefusal({ details: words }), { blocks }, words);
    for (const words of [
      'Must be authenticated!',
      'Your app has exceeded its compute units per second capacity',
      'block range extends beyond current head block',
      'header not found',
      'the method eth_getLogs does not exist/is not available',
    ])
      assert.equal(rangeRefusal({ details: words }), undefined, words);
    assert.equal(narrowerRange({ blocks: 10n }, 500n), 10n);
    assert.equal(narrowerRange({ blocks: 10_000n }, 500n), 250n, 'a named range no narrower than the one refused is not taken');
    assert.equal(narrowerRange({ blocks: undefined }, 3n), 1n);
  });
});

describe('a failing RPC never shows the key in its URL', () => {
  const SECRET = 'k3y-0f-th3-pr0v1d3r-4f9e';
  let rpc: Awaited<ReturnType<typeof provider>>;
  before(async () => {
    // Every request is refused, and the refusal quotes the key, as some providers' do.
    rpc = await provider((call) => jsonRpcError(call, -32600, `Must be authenticated! Unknown key ${SECRET}`, 401), { path: `/v2/${SECRET}` });
  });
  after(() => rpc.close());

  test('in the message, the stack and every field of the error of each read', async () => {
    const reader = createChainReader(`${rpc.url}?apikey=${SECRET}-query`);
    const reads: [string, () => Promise<unknown>][] = [
      ['head', () => reader.head()],
      ['block', () => reader.block(1n)],
      ['authorizationState', () => reader.authorizationState(auth, 1n)],
      ['authorizationEvents', () => reader.authorizationEvents(auth, 0n, 10n)],
      ['checkTransfer', () => reader.checkTransfer(pad('0x1'), auth)],
      ['probeLogRange', () => reader.probeLogRange(ASSET)],
    ];
    for (const [name, read] of reads) {
      const error = await read().then(
        () => assert.fail(`${name} should fail`),
        (error: unknown) => error,
      );
      assert.ok(error instanceof ChainReadError, name);
      assert.equal(error.status, 401, name);
      assert.match(error.message, new RegExp(`at ${rpc.origin.replaceAll('.', '\\.')}/… failed: .*Must be authenticated! Unknown key …`), name);
      for (const shown of [error.message, error.stack ?? '', JSON.stringify(error), inspect(error, { depth: 10 })])
        assert.doesNotMatch(shown, /k3y-0f-th3/, `${name}: ${shown}`);
    }
  });
});

describe("the rehearsal's RPC refusing eth_getLogs over 5 blocks, in front of the sandbox chain", () => {
  let dir: string;
  let rehearsal: LiveRehearsal;
  const dispatcher = getGlobalDispatcher();
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'till-chain-'));
    rehearsal = await startLiveRehearsal({ dir, rpcLogRangeLimit: 5 });
    // The reader fetches with the global dispatcher: let it trust the rehearsal's throwaway CA.
    setGlobalDispatcher(rehearsal.dispatcher);
  });
  after(async () => {
    setGlobalDispatcher(dispatcher);
    await rehearsal?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (body: unknown) =>
    (await rehearsal.fetch(rehearsal.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
  const getLogs = (id: number, from: number, to: number) => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_getLogs',
    params: [{ address: rehearsal.usdcAddress, fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
  });

  test('it answers 5 blocks, refuses 6 as Alchemy does, and in a batch refuses only the wide call', async () => {
    await rehearsal.sandbox.chain.mine(8);
    const refusedBefore = rehearsal.stats.rpcLogsRefused;
    assert.ok(Array.isArray(((await post(getLogs(1, 1, 5))) as { result: unknown }).result));
    assert.deepEqual(await post(getLogs(2, 1, 6)), {
      jsonrpc: '2.0',
      id: 2,
      error: {
        code: -32600,
        message:
          'Under the Free tier plan, you can make eth_getLogs requests with up to a 5 block range. Based on your parameters, this block range should work: [0x1, 0x5]',
      },
    });
    const batch = (await post([getLogs(3, 0, 7), { jsonrpc: '2.0', id: 4, method: 'eth_chainId', params: [] }, getLogs(5, 2, 3)])) as {
      id: number;
      result?: unknown;
      error?: { code: number };
    }[];
    assert.deepEqual(
      batch.map((answer) => [answer.id, answer.error?.code ?? 'result']),
      [
        [3, -32600],
        [4, 'result'],
        [5, 'result'],
      ],
    );
    assert.equal(batch[1]!.result, '0x2105');
    assert.equal(rehearsal.stats.rpcLogsRefused, refusedBefore + 2);
  });

  test('an authorization used on chain is found through it, searched 5 blocks at a time', async () => {
    const buyer = newAccount();
    await rehearsal.sandbox.fund(buyer.address, '1');
    const payTo = newAccount().address;
    const signed = authorization(buyer.address, payTo, 250_000n);
    const used = await submitAuthorization(rehearsal.sandbox.chain, signed, await signAuthorization(buyer, rehearsal.usdcAddress, signed));
    assert.equal(used.status, 'success');
    await rehearsal.sandbox.chain.mine(12);
    const reader = createChainReader(rehearsal.rpcUrl);
    const head = await reader.head();
    const events = await reader.authorizationEvents(
      { asset: rehearsal.usdcAddress, payer: buyer.address, payTo, value: 250_000n, nonce: signed.nonce },
      0n,
      head,
    );
    assert.deepEqual(events, [{ kind: 'used', txHash: used.txHash, blockNumber: BigInt(used.blockNumber) }]);
    assert.equal(reader.logRange(), 5n);
    assert.equal(await reader.probeLogRange(rehearsal.usdcAddress), 5n);
  });
});
