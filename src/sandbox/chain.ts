import { createRequire } from 'node:module';
import {
  type Address,
  createWalletClient,
  custom,
  defineChain,
  type EIP1193RequestFn,
  getAddress,
  type Hex,
  isAddressEqual,
  type PrivateKeyAccount,
  publicActions,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { MULTICALL3_ADDRESS, SANDBOX_CHAIN_ID, SANDBOX_FACILITATOR_PRIVATE_KEY, SANDBOX_MINTER_PRIVATE_KEY, SANDBOX_USDC_ADDRESS } from './constants.ts';
import { multicall3DeployedBytecode, sandboxUsdcAbi, sandboxUsdcBytecode } from './contracts/artifacts.ts';
import { type ChainProvider, journaledProvider, latestBlock, openJournal, readJournal, replayJournal } from './journal.ts';

export type { ChainProvider };

type HardhatNetworkModule = {
  createHardhatNetworkProvider(config: Record<string, unknown>, logger: { enabled: boolean }): Promise<ChainProvider>;
};
type HardhatDefaultsModule = { defaultHardhatNetworkParams: { hardfork: string; chains: unknown } };

const GAS_ETH_BALANCE = 10n ** 22n; // 10,000 ETH for the sandbox's own accounts

/** The EIP-1193 provider of Hardhat's EDR network, used in-process without a Hardhat project. */
async function createEdrProvider(initialDate: Date | undefined): Promise<ChainProvider> {
  const require = createRequire(import.meta.url);
  const { createHardhatNetworkProvider } = require('hardhat/internal/hardhat-network/provider/provider') as HardhatNetworkModule;
  const { defaultHardhatNetworkParams } = require('hardhat/internal/core/config/default-config') as HardhatDefaultsModule;
  return createHardhatNetworkProvider(
    {
      hardfork: defaultHardhatNetworkParams.hardfork,
      chainId: SANDBOX_CHAIN_ID,
      networkId: SANDBOX_CHAIN_ID,
      blockGasLimit: 60_000_000,
      minGasPrice: 0n,
      automine: true,
      intervalMining: 0,
      mempoolOrder: 'priority',
      chains: defaultHardhatNetworkParams.chains,
      genesisAccounts: [SANDBOX_MINTER_PRIVATE_KEY, SANDBOX_FACILITATOR_PRIVATE_KEY].map((privateKey) => ({
        privateKey,
        balance: GAS_ETH_BALANCE.toString(),
      })),
      allowUnlimitedContractSize: false,
      // A mined-but-reverted transaction is reported by its receipt, as on a real node.
      throwOnTransactionFailures: false,
      throwOnCallFailures: true,
      // Keeps chain time on the wall clock: several blocks in one second share its timestamp
      // instead of pushing chain time ahead (which would expire short authorizations early).
      allowBlocksWithSameTimestamp: true,
      enableTransientStorage: false,
      enableRip7212: false,
      // A chain restored from its journal restarts at its first start's time, so every transaction
      // can be replayed at its own timestamp.
      ...(initialDate ? { initialDate } : {}),
    },
    { enabled: false },
  );
}

export const sandboxViemChain = defineChain({
  id: SANDBOX_CHAIN_ID,
  name: 'Till sandbox (Base)',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [] } },
});

/** Runs one transaction at a time per account, so concurrent senders never race for a nonce. */
function serialized() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

function walletFor(provider: ChainProvider, account: PrivateKeyAccount) {
  return createWalletClient({
    account,
    chain: sandboxViemChain,
    // In-process provider: a revert is final, so no retries (viem retries -32603 by default).
    transport: custom({ request: provider.request.bind(provider) as EIP1193RequestFn }, { retryCount: 0 }),
    pollingInterval: 50,
  }).extend(publicActions);
}

export type SandboxWallet = ReturnType<typeof walletFor>;

export type SandboxChain = {
  provider: ChainProvider;
  /** Where the token is: SANDBOX_USDC_ADDRESS unless the chain was started with another `tokenAddress`. */
  usdcAddress: Address;
  publicClient: SandboxWallet;
  /** The facilitator's wallet; every transaction it sends goes through `sendFromFacilitator`. */
  facilitatorWallet: SandboxWallet;
  sendFromFacilitator: <T>(task: () => Promise<T>) => Promise<T>;
  mintUsdc(to: Address, amount: bigint): Promise<Hex>;
  balanceOf(address: Address): Promise<bigint>;
  /**
   * Sends a call to the token from the sandbox's own funded account, as a gas relayer would (e.g. a
   * buyer's signed `cancelAuthorization` or `transferWithAuthorization`); the receipt's outcome.
   */
  relayToToken(data: Hex): Promise<{ txHash: Hex; status: 'success' | 'reverted'; blockNumber: string }>;
  mine(blocks?: number): Promise<void>;
  increaseTime(seconds: number): Promise<void>;
  snapshot(): Promise<string>;
  revert(snapshotId: string): Promise<void>;
  /** What was restored from the journal at start (undefined for a chain kept in memory only). */
  restored: { transactions: number; failed: number } | undefined;
  /** Records where the chain stands, so the next start restores its empty blocks too. */
  close(): Promise<void>;
};

/**
 * Starts a chain with Multicall3 at its usual address and the sandbox USDC at its fixed address
 * (or at `tokenAddress`, e.g. Base's real USDC address for a rehearsal of live mode).
 * With a journal path the chain outlives the process: what the journal holds is replayed first,
 * and every transaction from then on is added to it.
 */
export async function startSandboxChain(options: { journalPath?: string; tokenAddress?: Address } = {}): Promise<SandboxChain> {
  const usdcAddress = getAddress(options.tokenAddress ?? SANDBOX_USDC_ADDRESS);
  const moved = !isAddressEqual(usdcAddress, SANDBOX_USDC_ADDRESS);
  if (isAddressEqual(usdcAddress, MULTICALL3_ADDRESS)) throw new Error(`the sandbox token cannot be placed at Multicall3's address ${MULTICALL3_ADDRESS}`);
  const existing = options.journalPath ? readJournal(options.journalPath) : undefined;
  const journaledToken = getAddress(existing?.header.token ?? SANDBOX_USDC_ADDRESS);
  if (existing && !isAddressEqual(journaledToken, usdcAddress)) {
    // Its transactions were signed for the token at the other address: replayed here they would call an empty account.
    throw new Error(
      `the sandbox chain in ${options.journalPath} has its token at ${journaledToken}, not ${usdcAddress}; start it with that token address or use another data folder`,
    );
  }
  const base = await createEdrProvider(existing ? new Date(existing.header.genesisTime * 1000) : undefined);
  await base.request({ method: 'hardhat_setCode', params: [MULTICALL3_ADDRESS, multicall3DeployedBytecode] });
  const deployer = walletFor(base, privateKeyToAccount(SANDBOX_MINTER_PRIVATE_KEY));
  const deployHash = await deployer.deployContract({ abi: sandboxUsdcAbi, bytecode: sandboxUsdcBytecode });
  const deployed = await deployer.waitForTransactionReceipt({ hash: deployHash });
  if (deployed.status !== 'success' || deployed.contractAddress?.toLowerCase() !== SANDBOX_USDC_ADDRESS.toLowerCase()) {
    throw new Error(`sandbox USDC deployed at ${deployed.contractAddress}, expected ${SANDBOX_USDC_ADDRESS}`);
  }
  if (moved) {
    // The runtime code moves as is: the minter is an immutable inside it, name and version are
    // constants, and DOMAIN_SEPARATOR reads address(this) at call time, so signatures bind to the
    // new address. The constructor wrote no storage, so nothing else has to move. The code at the
    // default address is removed, so the chain has one USDC only.
    const runtime = (await base.request({ method: 'eth_getCode', params: [SANDBOX_USDC_ADDRESS, 'latest'] })) as Hex;
    await base.request({ method: 'hardhat_setCode', params: [usdcAddress, runtime] });
    await base.request({ method: 'hardhat_setCode', params: [SANDBOX_USDC_ADDRESS, '0x'] });
  }

  let restored: SandboxChain['restored'];
  if (existing) {
    const replay = await replayJournal(base, existing, Date.now);
    restored = { transactions: replay.replayed, failed: replay.failed };
  }
  const genesisTime =
    existing?.header.genesisTime ??
    Number(((await base.request({ method: 'eth_getBlockByNumber', params: ['0x0', false] })) as { timestamp: string }).timestamp);
  const journal = options.journalPath ? openJournal(options.journalPath, { v: 1, genesisTime, ...(moved ? { token: usdcAddress } : {}) }, existing) : undefined;
  const provider = journal ? journaledProvider(base, journal) : base;

  const minterWallet = walletFor(provider, privateKeyToAccount(SANDBOX_MINTER_PRIVATE_KEY));
  const facilitatorWallet = walletFor(provider, privateKeyToAccount(SANDBOX_FACILITATOR_PRIVATE_KEY));
  const sendFromMinter = serialized();

  const balanceOf = (address: Address) => minterWallet.readContract({ address: usdcAddress, abi: sandboxUsdcAbi, functionName: 'balanceOf', args: [address] });

  return {
    provider,
    usdcAddress,
    publicClient: minterWallet,
    facilitatorWallet,
    sendFromFacilitator: serialized(),
    mintUsdc: (to, amount) =>
      sendFromMinter(async () => {
        const hash = await minterWallet.writeContract({
          address: usdcAddress,
          abi: sandboxUsdcAbi,
          functionName: 'mint',
          args: [to, amount],
        });
        const receipt = await minterWallet.waitForTransactionReceipt({ hash });
        if (receipt.status !== 'success') throw new Error(`mint transaction ${hash} reverted`);
        return hash;
      }),
    balanceOf,
    relayToToken: (data) =>
      sendFromMinter(async () => {
        const hash = await minterWallet.sendTransaction({ to: usdcAddress, data, gas: 500_000n });
        const receipt = await minterWallet.waitForTransactionReceipt({ hash });
        return { txHash: hash, status: receipt.status, blockNumber: receipt.blockNumber.toString() };
      }),
    mine: async (blocks = 1) => {
      // Mined blocks share the current time (Base makes one every 2 s; only increaseTime moves chain time ahead of the clock).
      await provider.request({ method: 'hardhat_mine', params: [`0x${blocks.toString(16)}`, '0x0'] });
    },
    increaseTime: async (seconds) => {
      await provider.request({ method: 'evm_increaseTime', params: [seconds] });
      await provider.request({ method: 'evm_mine', params: [] });
    },
    snapshot: async () => (await provider.request({ method: 'evm_snapshot', params: [] })) as string,
    revert: async (snapshotId) => {
      const reverted = await provider.request({ method: 'evm_revert', params: [snapshotId] });
      if (reverted !== true) throw new Error(`unknown snapshot ${snapshotId}`);
    },
    restored,
    close: async () => {
      if (!journal) return;
      const head = await latestBlock(base);
      journal.close({ head: head.number, time: head.time });
    },
  };
}
