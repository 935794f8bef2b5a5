import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { type Address, createPublicClient, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { freePort, temporaryDirectories } from '../testing/environment.ts';
import { authorization, exactRequirements, newAccount, paymentPayload, signAuthorization } from '../testing/payer.ts';
import { SANDBOX_USDC_ADDRESS } from './constants.ts';
import { sandboxUsdcAbi } from './contracts/artifacts.ts';
import { fundViaHttp, SANDBOX_JOURNAL_FILE, type Sandbox, startSandbox } from './index.ts';
import { spawnSandbox } from './spawn.ts';

const dataDir = temporaryDirectories('till-sandbox-data-');

/** Settles an EIP-3009 payment through the sandbox's own facilitator, as Till does. */
async function settle(sandbox: Pick<Sandbox, 'facilitatorUrl'>, payer: ReturnType<typeof newAccount>, payTo: Address, value: bigint, nonce?: Hex) {
  const auth = authorization(payer.address, payTo, value, nonce ? { nonce } : {});
  const requirements = exactRequirements(SANDBOX_USDC_ADDRESS, payTo, value);
  const payload = paymentPayload(requirements, await signAuthorization(payer, SANDBOX_USDC_ADDRESS, auth), auth, {
    url: 'http://127.0.0.1/x402/session/ps_persist',
    description: 'persistence',
  });
  return { settled: await new HTTPFacilitatorClient({ url: sandbox.facilitatorUrl }).settle(payload, requirements), nonce: auth.nonce };
}

const balanceOver = (rpcUrl: string, address: Address) =>
  createPublicClient({ transport: http(rpcUrl) }).readContract({
    address: SANDBOX_USDC_ADDRESS,
    abi: sandboxUsdcAbi,
    functionName: 'balanceOf',
    args: [address],
  });

describe('the sandbox chain kept in a data folder', () => {
  test('a restart finds old transactions, balances and used authorizations, and goes on from there', async () => {
    const dir = dataDir();
    const payer = newAccount();
    const merchant = privateKeyToAddress(generatePrivateKey());
    const first = await startSandbox({ dataDir: dir });
    assert.equal(first.restored, undefined, 'a new folder starts empty');
    const funded = await first.fund(payer.address, '5');
    const { settled, nonce } = await settle(first, payer, merchant, 1_250_000n);
    assert.equal(settled.success, true, settled.errorReason);
    await first.chain.mine(3);
    const headBefore = await createPublicClient({ transport: http(first.rpcUrl) }).getBlockNumber();
    await first.stop();
    assert.ok(existsSync(join(dir, SANDBOX_JOURNAL_FILE)));

    const second = await startSandbox({ dataDir: dir });
    try {
      assert.deepEqual(second.restored, { transactions: 2, failed: 0 });
      const client = createPublicClient({ transport: http(second.rpcUrl) });
      assert.ok((await client.getBlockNumber()) >= headBefore, 'block numbers go on from where they were');
      for (const hash of [funded.txHash, settled.transaction as Hex]) {
        const receipt = await client.getTransactionReceipt({ hash });
        assert.equal(receipt.status, 'success', hash);
        const page = await fetch(second.txUrl(hash));
        assert.equal(page.status, 200, hash);
      }
      assert.match(await (await fetch(second.txUrl(settled.transaction))).text(), /USDC\.transferWithAuthorization/);
      assert.equal(await second.balanceOf(payer.address), 3_750_000n);
      assert.equal(await second.balanceOf(merchant), 1_250_000n);
      // The used authorization stays used; new ones settle.
      const replayed = await settle(second, payer, merchant, 1_250_000n, nonce);
      assert.equal(replayed.settled.success, false);
      const next = await settle(second, payer, merchant, 250_000n);
      assert.equal(next.settled.success, true, next.settled.errorReason);
      assert.equal(await second.balanceOf(merchant), 1_500_000n);
    } finally {
      await second.stop();
    }
    const third = await startSandbox({ dataDir: dir });
    try {
      assert.deepEqual(third.restored, { transactions: 3, failed: 0 });
      assert.equal(await third.balanceOf(merchant), 1_500_000n);
    } finally {
      await third.stop();
    }
  });

  test('a sandbox process killed outright keeps every transaction it answered', async () => {
    const dir = dataDir();
    const port = await freePort();
    const buyer = privateKeyToAddress(generatePrivateKey());
    const running = await spawnSandbox({ port, dataDir: dir });
    const minted = await fundViaHttp(running.url, buyer, '7');
    running.child.kill('SIGKILL');
    await running.stop();
    const again = await spawnSandbox({ port, dataDir: dir });
    try {
      assert.deepEqual(again.restored, { transactions: 1, failed: 0 });
      assert.equal(await balanceOver(again.rpcUrl, buyer), 7_000_000n);
      assert.equal((await fetch(`${again.url}/tx/${minted.txHash}`)).status, 200);
    } finally {
      await again.stop();
    }
  });

  test('a token placed at another address (--token-address) is served there, and its data folder keeps that address', async () => {
    const dir = dataDir();
    const baseUsdc = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
    const buyer = privateKeyToAddress(generatePrivateKey());
    const running = await spawnSandbox({ dataDir: dir, tokenAddress: baseUsdc.toLowerCase() });
    try {
      assert.equal(running.usdcAddress, baseUsdc);
      const health = (await (await fetch(`${running.url}/healthz`)).json()) as { usdcAddress: string };
      assert.equal(health.usdcAddress, baseUsdc);
      const minted = (await fundViaHttp(running.url, buyer, '4')).txHash;
      const client = createPublicClient({ transport: http(running.rpcUrl) });
      assert.equal(await client.readContract({ address: baseUsdc, abi: sandboxUsdcAbi, functionName: 'balanceOf', args: [buyer] }), 4_000_000n);
      assert.equal(await client.getCode({ address: SANDBOX_USDC_ADDRESS }), undefined, 'one token only');
      assert.match(await (await fetch(`${running.url}/tx/${minted}`)).text(), /USDC\.mint/);
    } finally {
      await running.stop();
    }
    const again = await startSandbox({ dataDir: dir, tokenAddress: baseUsdc });
    try {
      assert.deepEqual(again.restored, { transactions: 1, failed: 0 });
      assert.equal(await again.balanceOf(buyer), 4_000_000n);
    } finally {
      await again.stop();
    }
    await assert.rejects(startSandbox({ dataDir: dir }), /has its token at 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913/);
  });

  test('till sandbox reset refuses while the sandbox runs, then makes the next start empty', async () => {
    const dir = dataDir();
    const port = await freePort();
    const buyer = privateKeyToAddress(generatePrivateKey());
    const env = { ...process.env, TILL_DATA_DIR: dir, TILL_SANDBOX_PORT: String(port), TILL_FACILITATOR_URL: '', TILL_SANDBOX_URL: '' };
    const reset = () => spawnSync(process.execPath, [resolve(import.meta.dirname, '../cli/main.ts'), 'sandbox', 'reset'], { env, encoding: 'utf8' });
    const running = await spawnSandbox({ port, dataDir: dir });
    await fundViaHttp(running.url, buyer, '3');
    const refused = reset();
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /a sandbox is running at http:\/\/127\.0\.0\.1:\d+; stop it/);
    await running.stop();
    const done = reset();
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /Sandbox chain reset/);
    assert.equal(existsSync(join(dir, SANDBOX_JOURNAL_FILE)), false);
    const fresh = await spawnSandbox({ port, dataDir: dir });
    try {
      assert.equal(fresh.restored, undefined);
      assert.equal(await balanceOver(fresh.rpcUrl, buyer), 0n);
    } finally {
      await fresh.stop();
    }
  });
});
