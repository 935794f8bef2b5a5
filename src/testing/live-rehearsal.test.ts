// The live-mode rehearsal's own stand-ins work: https with a throwaway CA, the sandbox chain as
// Base with the token at Base's USDC address, and a facilitator that asks for CDP-style JWTs made
// by `@coinbase/x402`'s createAuthHeader (the code the service runs).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, mock, test } from 'node:test';
import { createAuthHeader } from '@coinbase/x402';
import { createPublicClient, http, parseAbi } from 'viem';
import { BASE_USDC_ADDRESS } from '../common/network.ts';
import { SANDBOX_USDC_ADDRESS } from '../sandbox/constants.ts';
import { type LiveRehearsal, startLiveRehearsal } from './live-rehearsal.ts';
import { newAccount } from './payer.ts';

const tokenAbi = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function balanceOf(address) view returns (uint256)',
]);

describe('live-mode rehearsal', () => {
  let dir: string;
  let rehearsal: LiveRehearsal;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'till-rehearsal-'));
    rehearsal = await startLiveRehearsal({ dir });
  });

  after(async () => {
    await rehearsal?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const supportedPath = () => new URL(`${rehearsal.facilitatorUrl}/supported`).pathname;
  const getSupported = (authorizationHeader?: string) =>
    rehearsal.fetch(`${rehearsal.facilitatorUrl}/supported`, { headers: authorizationHeader ? { authorization: authorizationHeader } : {} });

  test('the URLs are https on localhost, and only a client trusting the throwaway CA gets through', async () => {
    assert.match(rehearsal.facilitatorUrl, /^https:\/\/localhost:\d+\/platform\/v2\/x402$/);
    assert.match(rehearsal.rpcUrl, /^https:\/\/localhost:\d+\/rpc$/);
    assert.equal(rehearsal.childEnv.NODE_EXTRA_CA_CERTS, rehearsal.caPath);
    await assert.rejects(fetch(rehearsal.rpcUrl, { method: 'POST', body: '{}' }), (error: Error & { cause?: { code?: string } }) => {
      assert.match(String(error.cause?.code), /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
      return true;
    });
  });

  test('/supported with a valid JWT lists exact on eip155:8453, forwarded to the sandbox', async () => {
    const before = rehearsal.stats.facilitator.supported;
    const response = await getSupported(await createAuthHeader(rehearsal.apiKeyId, rehearsal.apiKeySecret, 'GET', rehearsal.host, supportedPath()));
    assert.equal(response.status, 200);
    const body = (await response.json()) as { kinds: { scheme: string; network: string }[] };
    assert.ok(body.kinds.some((kind) => kind.scheme === 'exact' && kind.network === 'eip155:8453'));
    assert.equal(rehearsal.stats.facilitator.supported, before + 1);
  });

  test('the RPC answers over https as Base, and the token sits at Base USDC address', async () => {
    const rpc = await rehearsal.fetch(rehearsal.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    });
    assert.deepEqual(await rpc.json(), { jsonrpc: '2.0', id: 1, result: '0x2105' });

    assert.equal(rehearsal.usdcAddress, BASE_USDC_ADDRESS);
    const client = createPublicClient({ transport: http(rehearsal.rpcUrl, { fetchFn: rehearsal.fetch, retryCount: 0 }) });
    assert.equal(await client.getChainId(), 8453);
    const read = (functionName: 'name' | 'version') => client.readContract({ address: BASE_USDC_ADDRESS, abi: tokenAbi, functionName });
    assert.equal(await read('name'), 'USD Coin');
    assert.equal(await read('version'), '2');
    // One USDC on the chain: nothing is left at the sandbox's default token address.
    assert.equal(await client.getCode({ address: SANDBOX_USDC_ADDRESS }), undefined);

    const holder = newAccount().address;
    await rehearsal.sandbox.fund(holder, '12.5');
    assert.equal(await client.readContract({ address: BASE_USDC_ADDRESS, abi: tokenAbi, functionName: 'balanceOf', args: [holder] }), 12_500_000n);
    assert.equal(await rehearsal.sandbox.balanceOf(holder), 12_500_000n);
  });

  test('refuses with 401 a missing header, a wrong key, a JWT for another path, method or host, and an expired JWT', async () => {
    const path = supportedPath();
    const refusedBefore = rehearsal.stats.refused;
    const forwardedBefore = rehearsal.stats.facilitator.supported;
    const expired = await (async () => {
      mock.timers.enable({ apis: ['Date'], now: Date.now() - 10 * 60_000 });
      try {
        return await createAuthHeader(rehearsal.apiKeyId, rehearsal.apiKeySecret, 'GET', rehearsal.host, path);
      } finally {
        mock.timers.reset();
      }
    })();
    const cases: [string, string | undefined, RegExp][] = [
      ['missing header', undefined, /no Authorization header/],
      ['not a bearer JWT', 'Basic Zm9vOmJhcg==', /not "Bearer <JWT>"/],
      ['right key id, wrong secret', await createAuthHeader(rehearsal.apiKeyId, rehearsal.wrongKey.secret, 'GET', rehearsal.host, path), /signature/],
      ['unknown key', await createAuthHeader(rehearsal.wrongKey.id, rehearsal.wrongKey.secret, 'GET', rehearsal.host, path), /unknown API key id/],
      [
        'wrong path in uris',
        await createAuthHeader(rehearsal.apiKeyId, rehearsal.apiKeySecret, 'GET', rehearsal.host, path.replace('supported', 'verify')),
        /uris/,
      ],
      ['wrong method in uris', await createAuthHeader(rehearsal.apiKeyId, rehearsal.apiKeySecret, 'POST', rehearsal.host, path), /uris/],
      ['host without its port', await createAuthHeader(rehearsal.apiKeyId, rehearsal.apiKeySecret, 'GET', 'localhost', path), /uris/],
      ['expired', expired, /expired/],
    ];
    for (const [label, header, reason] of cases) {
      const response = await getSupported(header);
      assert.equal(response.status, 401, label);
      const body = (await response.json()) as { errorType: string; errorMessage: string };
      assert.equal(body.errorType, 'unauthorized', label);
      assert.match(body.errorMessage, reason, label);
    }
    assert.equal(rehearsal.stats.refused, refusedBefore + cases.length);
    assert.equal(rehearsal.stats.facilitator.supported, forwardedBefore);

    // POST endpoints are guarded the same way.
    const unauthenticated = await rehearsal.fetch(`${rehearsal.facilitatorUrl}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(unauthenticated.status, 401);
    assert.equal(rehearsal.stats.facilitator.settle, 0);
  });

  test('httpsFrontFor puts https in front of a local http server', async () => {
    const target = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url, host: req.headers.host, proto: req.headers['x-forwarded-proto'] }));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    try {
      const front = await rehearsal.httpsFrontFor(`http://127.0.0.1:${(target.address() as AddressInfo).port}`);
      const response = await rehearsal.fetch(`${front.url}/checkout/pay?uid=abc`);
      assert.deepEqual(await response.json(), { path: '/checkout/pay?uid=abc', host: `localhost:${front.port}`, proto: 'https' });
      await front.stop();
    } finally {
      target.closeAllConnections();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });
});
