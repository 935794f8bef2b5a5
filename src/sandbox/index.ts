import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Address, getAddress, type Hex, isAddress } from 'viem';
import { startSandboxChain } from './chain.ts';
import { SANDBOX_CHAIN_ID, SANDBOX_NETWORK } from './constants.ts';
import { createSandboxFacilitator } from './facilitator.ts';
import { createFaultState, type SandboxFacilitatorStats, type SandboxFaults, type SandboxFaultsUpdate } from './faults.ts';
import { createSandboxRequestHandler, type FaucetResult, fundFromFaucet } from './server.ts';

export type SandboxOptions = {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** Serve the test-only `/admin/*` endpoints over HTTP. */
  faultControls?: boolean;
  /**
   * Mine an empty block this often when nothing else does (0: only on transactions). Base makes a
   * block every 2 s, and chain time only moves with blocks; an expired authorization is judged by
   * chain time, so a standalone sandbox keeps producing blocks.
   */
  blockIntervalMs?: number;
  /** Keep the chain in this folder across restarts (its journal, `sandbox-chain.jsonl`); memory only when absent. */
  dataDir?: string;
  /**
   * Put the token at this address instead of SANDBOX_USDC_ADDRESS, e.g. Base's USDC
   * (0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913) to rehearse live mode. A data folder keeps the
   * address its chain was started with; starting it with another one is refused.
   */
  tokenAddress?: string;
};

export const SANDBOX_JOURNAL_FILE = 'sandbox-chain.jsonl';

/** Chain helpers for tests: time, blocks and snapshots (a revert drops the blocks after the snapshot, like a reorg). */
export type SandboxChainControls = {
  mine(blocks?: number): Promise<void>;
  /** Submits a call to the token from the sandbox's funded account (a relayer), e.g. a signed cancelAuthorization. */
  relayToToken(data: Hex): Promise<{ txHash: Hex; status: 'success' | 'reverted'; blockNumber: string }>;
  /** Moves chain time ahead of wall-clock time and mines a block at the new time. */
  increaseTime(seconds: number): Promise<void>;
  snapshot(): Promise<string>;
  revert(snapshotId: string): Promise<void>;
};

export type SandboxFaultControls = {
  set(update: SandboxFaultsUpdate): Promise<SandboxFaults>;
  get(): Promise<{ faults: SandboxFaults; stats: SandboxFacilitatorStats }>;
};

export type Sandbox = {
  url: string;
  rpcUrl: string;
  facilitatorUrl: string;
  usdcAddress: Address;
  chainId: typeof SANDBOX_CHAIN_ID;
  network: typeof SANDBOX_NETWORK;
  /** The account that submits settlements (pays gas). */
  facilitatorAddress: Address;
  txUrl(hash: string): string;
  /** Mints test USDC (decimal string, e.g. "100" or "0.5") to an address. */
  fund(address: string, usdc: string): Promise<FaucetResult>;
  /** USDC balance in 6-decimal base units. */
  balanceOf(address: string): Promise<bigint>;
  chain: SandboxChainControls;
  faults: SandboxFaultControls;
  /** Transactions replayed from the data folder's journal at start; undefined when kept in memory. */
  restored: { transactions: number; failed: number } | undefined;
  stop(): Promise<void>;
};

/** Starts the sandbox chain, token, facilitator and its HTTP server (127.0.0.1 by default). */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  if (options.tokenAddress !== undefined && !isAddress(options.tokenAddress, { strict: false })) {
    throw new Error(`invalid sandbox token address: ${options.tokenAddress}`);
  }
  const chain = await startSandboxChain({
    ...(options.dataDir ? { journalPath: join(options.dataDir, SANDBOX_JOURNAL_FILE) } : {}),
    ...(options.tokenAddress ? { tokenAddress: getAddress(options.tokenAddress) } : {}),
  });
  const faultState = createFaultState();
  const facilitator = createSandboxFacilitator(chain);
  const server = createServer(createSandboxRequestHandler({ chain, facilitator, faults: faultState, faultControls: options.faultControls ?? false }));
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const blockTimer = options.blockIntervalMs ? setInterval(() => void chain.mine().catch(() => {}), options.blockIntervalMs).unref() : undefined;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url,
    rpcUrl: `${url}/rpc`,
    facilitatorUrl: `${url}/facilitator`,
    usdcAddress: chain.usdcAddress,
    chainId: SANDBOX_CHAIN_ID,
    network: SANDBOX_NETWORK,
    facilitatorAddress: chain.facilitatorWallet.account.address,
    txUrl: (hash) => `${url}/tx/${hash}`,
    fund: async (address, usdc) => {
      const funded = await fundFromFaucet(chain, address, usdc);
      faultState.stats.lastMintTransaction = funded.txHash;
      return funded;
    },
    balanceOf: (address) => chain.balanceOf(getAddress(address)),
    chain: {
      mine: chain.mine,
      relayToToken: chain.relayToToken,
      increaseTime: chain.increaseTime,
      snapshot: chain.snapshot,
      revert: chain.revert,
    },
    faults: {
      set: async (update) => faultState.update(update),
      get: async () => faultState.snapshot(),
    },
    restored: chain.restored,
    stop: async () => {
      clearInterval(blockTimer);
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      await chain.close();
    },
  };
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const data = (await response.json().catch(() => null)) as (T & { error?: { message?: string } }) | null;
  if (!response.ok || data === null) {
    throw new Error(`sandbox ${new URL(url).pathname} failed (${response.status}): ${data?.error?.message ?? 'no JSON answer'}`);
  }
  return data;
}

/** Mints test USDC through a running sandbox's faucet (`POST {sandboxUrl}/faucet`). */
export function fundViaHttp(sandboxUrl: string, address: string, usdc: string): Promise<FaucetResult> {
  return postJson<FaucetResult>(`${trimSlash(sandboxUrl)}/faucet`, { address, usdc });
}

type ChainHead = { blockNumber: string; blockTimestamp: number };

/** The same test controls, for a sandbox running in another process with fault controls on. */
export function sandboxControlsViaHttp(sandboxUrl: string): { chain: SandboxChainControls; faults: SandboxFaultControls } {
  const base = `${trimSlash(sandboxUrl)}/admin`;
  return {
    chain: {
      mine: async (blocks = 1) => void (await postJson<ChainHead>(`${base}/chain/mine`, { blocks })),
      relayToToken: (data) => postJson(`${base}/token/relay`, { data }),
      increaseTime: async (seconds) => void (await postJson<ChainHead>(`${base}/chain/increase-time`, { seconds })),
      snapshot: async () => (await postJson<{ snapshotId: string }>(`${base}/chain/snapshot`, {})).snapshotId,
      revert: async (snapshotId) => void (await postJson<ChainHead>(`${base}/chain/revert`, { snapshotId })),
    },
    faults: {
      set: async (update) => (await postJson<{ faults: SandboxFaults }>(`${base}/faults`, update)).faults,
      get: async () => {
        const response = await fetch(`${base}/faults`);
        if (!response.ok) throw new Error(`sandbox /admin/faults failed (${response.status})`);
        return (await response.json()) as { faults: SandboxFaults; stats: SandboxFacilitatorStats };
      },
    },
  };
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
