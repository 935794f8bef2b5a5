import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { type Address, createPublicClient, domainSeparator, getContractAddress, type Hex, http, type PrivateKeyAccount, parseEventLogs } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { authorization, exactRequirements, newAccount, nowSeconds, paymentPayload, randomNonce, signAuthorization } from '../testing/payer.ts';
import { startSandboxChain } from './chain.ts';
import { SANDBOX_CHAIN_ID, SANDBOX_MINTER_PRIVATE_KEY, SANDBOX_USDC_ADDRESS } from './constants.ts';
import { sandboxUsdcAbi } from './contracts/artifacts.ts';
import { escapeHtml } from './explorer.ts';
import { fundViaHttp, type Sandbox, sandboxControlsViaHttp, startSandbox } from './index.ts';
import { spawnSandbox } from './spawn.ts';

const BASE_MAINNET_USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

const domain = {
  name: 'USD Coin',
  version: '2',
  chainId: SANDBOX_CHAIN_ID,
  verifyingContract: SANDBOX_USDC_ADDRESS,
} as const;

const requirementsFor = (payTo: Address, amount: bigint): PaymentRequirements => exactRequirements(SANDBOX_USDC_ADDRESS, payTo, amount);

/** A v2 payment payload signed with `signer` on behalf of `from` (they differ only for forgeries). */
async function signPayment(signer: PrivateKeyAccount, requirements: PaymentRequirements, from: Address = signer.address): Promise<PaymentPayload> {
  const auth = authorization(from, requirements.payTo as Address, BigInt(requirements.amount), { validAfter: nowSeconds() - 600n });
  const signature = await signAuthorization(signer, SANDBOX_USDC_ADDRESS, auth);
  return paymentPayload(requirements, signature, auth, { url: 'http://127.0.0.1/x402/session/ps_test', description: 'test' });
}

function nonceOf(payload: PaymentPayload): Hex {
  return (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
}

describe('sandbox', () => {
  let sandbox: Sandbox;
  let facilitator: HTTPFacilitatorClient;
  let chainClient: ReturnType<typeof createPublicClient>;

  before(async () => {
    sandbox = await startSandbox({ port: 0, faultControls: true });
    facilitator = new HTTPFacilitatorClient({ url: sandbox.facilitatorUrl });
    chainClient = createPublicClient({ transport: http(sandbox.rpcUrl) });
  });

  after(async () => {
    await sandbox.stop();
  });

  async function fundedPayer(usdc: string): Promise<PrivateKeyAccount> {
    const payer = newAccount();
    const funded = await fundViaHttp(sandbox.url, payer.address, usdc);
    assert.equal(funded.balance, usdc);
    return payer;
  }

  const authorizationUsed = (nonce: Hex, authorizer: Address) =>
    chainClient.readContract({
      address: SANDBOX_USDC_ADDRESS,
      abi: sandboxUsdcAbi,
      functionName: 'authorizationState',
      args: [authorizer, nonce],
    });

  test("the token answers like Circle's USDC on Base, at a fixed sandbox-only address", async () => {
    assert.equal(await chainClient.getChainId(), 8453);
    const read = (functionName: 'name' | 'version' | 'symbol' | 'decimals' | 'DOMAIN_SEPARATOR') =>
      chainClient.readContract({ address: SANDBOX_USDC_ADDRESS, abi: sandboxUsdcAbi, functionName });
    assert.equal(await read('name'), 'USD Coin');
    assert.equal(await read('version'), '2');
    assert.equal(await read('symbol'), 'USDC');
    assert.equal(await read('decimals'), 6);
    assert.equal(await read('DOMAIN_SEPARATOR'), domainSeparator({ domain }));
    assert.equal(SANDBOX_USDC_ADDRESS, getContractAddress({ from: privateKeyToAddress(SANDBOX_MINTER_PRIVATE_KEY), nonce: 0n }));
    assert.notEqual(SANDBOX_USDC_ADDRESS.toLowerCase(), BASE_MAINNET_USDC.toLowerCase());
  });

  test('the facilitator advertises exact on eip155:8453 with the sandbox signer', async () => {
    const supported = await facilitator.getSupported();
    assert.ok(supported.kinds.some((k) => k.x402Version === 2 && k.scheme === 'exact' && k.network === 'eip155:8453'));
    assert.deepEqual(Object.values(supported.signers).flat(), [sandbox.facilitatorAddress]);
  });

  test('a signed EIP-3009 authorization verifies, settles, and moves exactly the amount', async () => {
    const payer = await fundedPayer('5');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 1_250_000n);
    const payload = await signPayment(payer, requirements);

    const verified = await facilitator.verify(payload, requirements);
    assert.equal(verified.isValid, true, verified.invalidReason);
    assert.equal(verified.payer, payer.address);

    const settled = await facilitator.settle(payload, requirements);
    assert.equal(settled.success, true, settled.errorReason);
    assert.equal(settled.network, 'eip155:8453');
    assert.equal(settled.payer, payer.address);

    assert.equal(await sandbox.balanceOf(payer.address), 3_750_000n);
    assert.equal(await sandbox.balanceOf(merchant), 1_250_000n);

    const receipt = await chainClient.getTransactionReceipt({ hash: settled.transaction as Hex });
    assert.equal(receipt.status, 'success');
    assert.equal(receipt.from.toLowerCase(), sandbox.facilitatorAddress.toLowerCase());
    const events = parseEventLogs({ abi: sandboxUsdcAbi, logs: receipt.logs });
    const used = events.find((e) => e.eventName === 'AuthorizationUsed');
    assert.deepEqual(used?.args, { authorizer: payer.address, nonce: nonceOf(payload) });
    const transfer = events.find((e) => e.eventName === 'Transfer');
    assert.deepEqual(transfer?.args, { from: payer.address, to: merchant, value: 1_250_000n });
    assert.equal(await authorizationUsed(nonceOf(payload), payer.address), true);

    const page = await fetch(sandbox.txUrl(settled.transaction));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await page.text();
    assert.match(html, /USDC\.transferWithAuthorization/);
    assert.match(html, /1\.25 USDC/);
    assert.ok(html.includes(merchant));
    assert.ok(html.includes(sandbox.facilitatorAddress));
  });

  test('a payload made by the official x402 EVM client settles once the sandbox token is allowed', async () => {
    const payer = await fundedPayer('1');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 10_000n);
    const paymentRequired = {
      x402Version: 2,
      resource: { url: 'http://127.0.0.1/x402/session/ps_test', description: 'test', mimeType: 'application/json' },
      accepts: [requirements],
    };
    const schemes = [{ network: 'eip155:8453' as const, client: new ExactEvmScheme(payer) }];
    await assert.rejects(x402Client.fromConfig({ schemes }).createPaymentPayload(paymentRequired), /spendControls/);
    const client = x402Client.fromConfig({
      schemes,
      spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: SANDBOX_USDC_ADDRESS }] },
    });
    const payload = await client.createPaymentPayload(paymentRequired);
    assert.equal((await facilitator.verify(payload, requirements)).isValid, true);
    assert.equal((await facilitator.settle(payload, requirements)).success, true);
    assert.equal(await sandbox.balanceOf(merchant), 10_000n);
  });

  test('a replayed nonce fails verify and settle and moves nothing', async () => {
    const payer = await fundedPayer('2');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 500_000n);
    const payload = await signPayment(payer, requirements);
    assert.equal((await facilitator.settle(payload, requirements)).success, true);

    const reverify = await facilitator.verify(payload, requirements);
    assert.equal(reverify.isValid, false);
    assert.equal(reverify.invalidReason, 'invalid_exact_evm_nonce_already_used');

    const resettle = await facilitator.settle(payload, requirements);
    assert.equal(resettle.success, false);
    assert.equal(resettle.errorReason, 'invalid_exact_evm_nonce_already_used');
    assert.equal(await sandbox.balanceOf(merchant), 500_000n);
    assert.equal(await sandbox.balanceOf(payer.address), 1_500_000n);
  });

  test('a forged signature fails verify and settle', async () => {
    const payer = await fundedPayer('2');
    const forger = newAccount();
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 1_000_000n);
    const forged = await signPayment(forger, requirements, payer.address);

    const verified = await facilitator.verify(forged, requirements);
    assert.equal(verified.isValid, false);
    assert.equal(verified.invalidReason, 'invalid_exact_evm_signature');
    const settled = await facilitator.settle(forged, requirements);
    assert.equal(settled.success, false);
    assert.equal(settled.errorReason, 'invalid_exact_evm_signature');
    assert.equal(await sandbox.balanceOf(payer.address), 2_000_000n);
    assert.equal(await authorizationUsed(nonceOf(forged), payer.address), false);
  });

  test('a payment for another amount than required fails verify', async () => {
    const payer = await fundedPayer('2');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const payload = await signPayment(payer, requirementsFor(merchant, 1_000_000n));
    const verified = await facilitator.verify(payload, requirementsFor(merchant, 1_500_000n));
    assert.equal(verified.isValid, false);
    assert.equal(verified.invalidReason, 'invalid_exact_evm_payload_authorization_value_mismatch');
  });

  test('a malformed facilitator request is refused with 400', async () => {
    const response = await fetch(`${sandbox.facilitatorUrl}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paymentPayload: { nope: true } }),
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { isValid: boolean }).isValid, false);
  });

  test('fault control: a dropped settle answer still leaves the transfer on chain', async () => {
    const controls = sandboxControlsViaHttp(sandbox.url);
    const payer = await fundedPayer('1');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 400_000n);
    const payload = await signPayment(payer, requirements);
    const before = (await controls.faults.get()).stats;

    assert.deepEqual(await controls.faults.set({ dropNextSettleResponse: true }), {
      dropNextSettleResponse: true,
      delaySettleMs: 0,
      delayVerifyMs: 0,
      settleFault: 'none',
      rpcLagBlocks: 0,
    });
    await assert.rejects(facilitator.settle(payload, requirements));

    const { faults, stats } = await controls.faults.get();
    assert.equal(faults.dropNextSettleResponse, false, 'the drop is one-shot');
    assert.equal(stats.settleRequests, before.settleRequests + 1);
    assert.equal(stats.droppedSettleResponses, before.droppedSettleResponses + 1);
    assert.equal(stats.settledTransactions.length, before.settledTransactions.length + 1);
    assert.equal(await sandbox.balanceOf(merchant), 400_000n);
    assert.equal(await authorizationUsed(nonceOf(payload), payer.address), true);
  });

  test('fault control: settle answers can be delayed', async () => {
    const controls = sandboxControlsViaHttp(sandbox.url);
    const payer = await fundedPayer('1');
    const requirements = requirementsFor(privateKeyToAddress(generatePrivateKey()), 100_000n);
    await controls.faults.set({ delaySettleMs: 300 });
    try {
      const started = performance.now();
      const settled = await facilitator.settle(await signPayment(payer, requirements), requirements);
      assert.equal(settled.success, true);
      assert.ok(performance.now() - started >= 300);
    } finally {
      await controls.faults.set({ delaySettleMs: 0 });
    }
  });

  test('chain controls: a revert to a snapshot drops a settled transfer like a reorg', async () => {
    const controls = sandboxControlsViaHttp(sandbox.url);
    const payer = await fundedPayer('1');
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 300_000n);
    const payload = await signPayment(payer, requirements);

    const snapshotId = await controls.chain.snapshot();
    const settled = await facilitator.settle(payload, requirements);
    assert.equal(settled.success, true);
    assert.equal(await sandbox.balanceOf(merchant), 300_000n);

    await controls.chain.revert(snapshotId);
    assert.equal(await sandbox.balanceOf(merchant), 0n);
    assert.equal(await authorizationUsed(nonceOf(payload), payer.address), false);
    assert.equal(await chainClient.getTransactionReceipt({ hash: settled.transaction as Hex }).catch(() => null), null);

    // The still-valid authorization can be submitted again after the "reorg".
    const resettled = await facilitator.settle(payload, requirements);
    assert.equal(resettled.success, true);
    assert.equal(await sandbox.balanceOf(merchant), 300_000n);
  });

  test('the public RPC serves reads and raw transactions but no node-side signing or chain manipulation', async () => {
    const rpc = async (body: unknown) =>
      (await (await fetch(sandbox.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as {
        result?: unknown;
        error?: { code: number };
      } & unknown[];
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })).result, '0x2105');
    for (const method of ['evm_mine', 'hardhat_setBalance', 'eth_sendTransaction', 'eth_sign', 'eth_accounts']) {
      assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method, params: [] })).error?.code, -32601, method);
    }
    const batch = await rpc([
      { jsonrpc: '2.0', id: 1, method: 'net_version', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber', params: [] },
    ]);
    assert.equal(batch.length, 2);
  });

  test('the faucet refuses bad addresses and amounts', async () => {
    const faucet = (body: unknown) =>
      fetch(`${sandbox.url}/faucet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const badAddress = await faucet({ address: '0x1234', usdc: '1' });
    assert.equal(badAddress.status, 400);
    assert.deepEqual(((await badAddress.json()) as { error: { code: string; field: string } }).error.field, 'address');
    const badAmount = await faucet({ address: privateKeyToAddress(generatePrivateKey()), usdc: '1.0000001' });
    assert.equal(badAmount.status, 400);
    const { error } = (await badAmount.json()) as { error: { code: string; message: string; field: string } };
    assert.equal(error.code, 'invalid_field');
    assert.equal(error.field, 'usdc');
    assert.match(error.message, /at most 6 decimals/);
    assert.equal((await faucet({ address: privateKeyToAddress(generatePrivateKey()), usdc: '-1' })).status, 400);
    assert.equal((await faucet({ address: privateKeyToAddress(generatePrivateKey()), usdc: '0' })).status, 400);
    const ok = (await (await faucet({ address: privateKeyToAddress(generatePrivateKey()), usdc: 0.5 })).json()) as {
      usdc: string;
    };
    assert.equal(ok.usdc, '0.5');
  });

  test('the explorer answers 404 for an unknown transaction', async () => {
    const response = await fetch(sandbox.txUrl(`0x${'ab'.repeat(32)}`));
    assert.equal(response.status, 404);
    assert.match(await response.text(), /Transaction not found/);
    assert.equal((await fetch(`${sandbox.url}/tx/%3Cscript%3E`)).status, 404);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  test('concurrent settlements from different payers all land', async () => {
    const merchant = privateKeyToAddress(generatePrivateKey());
    const requirements = requirementsFor(merchant, 100_000n);
    const payers = await Promise.all(Array.from({ length: 8 }, () => fundedPayer('1')));
    const payloads = await Promise.all(payers.map((payer) => signPayment(payer, requirements)));
    const results = await Promise.all(payloads.map((payload) => facilitator.settle(payload, requirements)));
    assert.deepEqual(
      results.map((r) => r.success),
      payers.map(() => true),
    );
    assert.equal(await sandbox.balanceOf(merchant), 800_000n);
  });
});

describe('sandbox chain time', () => {
  test('moves forward and mines blocks on request', async () => {
    // Its own sandbox: a chain clock ahead of wall-clock time would expire other tests' authorizations.
    const sandbox = await startSandbox({ faultControls: true });
    try {
      const controls = sandboxControlsViaHttp(sandbox.url);
      const chainClient = createPublicClient({ transport: http(sandbox.rpcUrl) });
      const start = await chainClient.getBlock();
      await controls.chain.mine(3);
      const mined = await chainClient.getBlock();
      assert.equal(mined.number, start.number + 3n);
      await controls.chain.increaseTime(120);
      const later = await chainClient.getBlock();
      assert.equal(later.number, mined.number + 1n);
      assert.ok(later.timestamp >= mined.timestamp + 120n);
    } finally {
      await sandbox.stop();
    }
  });
});

describe('sandbox token contract', () => {
  test("accepts the bytes-signature form and cancelAuthorization, with Circle's events", async () => {
    const chain = await startSandboxChain();
    const payer = newAccount();
    const merchant = privateKeyToAddress(generatePrivateKey());
    await chain.mintUsdc(payer.address, 1_000_000n);
    const wallet = chain.facilitatorWallet;
    const message = authorization(payer.address, merchant, 250_000n, { validAfter: nowSeconds() - 600n });
    const signature = await signAuthorization(payer, SANDBOX_USDC_ADDRESS, message);
    const hash = await wallet.writeContract({
      address: SANDBOX_USDC_ADDRESS,
      abi: sandboxUsdcAbi,
      functionName: 'transferWithAuthorization',
      args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature],
    });
    assert.equal((await wallet.waitForTransactionReceipt({ hash })).status, 'success');
    assert.equal(await chain.balanceOf(merchant), 250_000n);

    const cancelNonce = randomNonce();
    const cancelSignature = await payer.signTypedData({
      domain,
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: payer.address, nonce: cancelNonce },
    });
    const cancelHash = await wallet.writeContract({
      address: SANDBOX_USDC_ADDRESS,
      abi: sandboxUsdcAbi,
      functionName: 'cancelAuthorization',
      args: [payer.address, cancelNonce, cancelSignature],
    });
    const cancelReceipt = await wallet.waitForTransactionReceipt({ hash: cancelHash });
    const canceled = parseEventLogs({ abi: sandboxUsdcAbi, logs: cancelReceipt.logs, eventName: 'AuthorizationCanceled' });
    assert.deepEqual(canceled[0]?.args, { authorizer: payer.address, nonce: cancelNonce });

    const reuse = await signAuthorization(payer, SANDBOX_USDC_ADDRESS, { ...message, nonce: cancelNonce });
    await assert.rejects(
      wallet.simulateContract({
        address: SANDBOX_USDC_ADDRESS,
        abi: sandboxUsdcAbi,
        functionName: 'transferWithAuthorization',
        args: [message.from, message.to, message.value, message.validAfter, message.validBefore, cancelNonce, reuse],
      }),
      /authorization is used or canceled/,
    );
  });
});

describe('sandbox process', () => {
  test('starts as its own process, announces itself, and stops on SIGTERM', async () => {
    const spawned = await spawnSandbox({ port: 0 });
    try {
      assert.equal(spawned.chainId, 8453);
      assert.equal(spawned.usdcAddress, SANDBOX_USDC_ADDRESS);
      const health = (await (await fetch(`${spawned.url}/healthz`)).json()) as { status: string };
      assert.equal(health.status, 'ok');
      assert.equal((await fetch(`${spawned.url}/admin/faults`)).status, 404, 'fault controls are off unless asked for');
    } finally {
      await spawned.stop();
    }
    assert.equal(spawned.child.exitCode, 0);
  });
});
