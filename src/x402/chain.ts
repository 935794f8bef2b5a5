import { createPublicClient, getAddress, type Hex, http, type PublicClient, parseAbi, parseEventLogs, TransactionReceiptNotFoundError } from 'viem';
import { CHAIN_ID } from '../common/network.ts';

const eip3009Abi = parseAbi([
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
]);

/** How far back the reconciler looks for an authorization's events (about a day of Base blocks). */
const LOG_LOOKBACK_BLOCKS = 50_000n;

export type Authorization = { asset: string; payer: string; payTo: string; value: bigint; nonce: string };
export type TransferFound = { txHash: Hex; blockNumber: bigint };

/** What the chain says about EIP-3009 authorizations: facts only, read over the Base RPC. */
export type ChainReader = {
  latestBlock(): Promise<{ number: bigint; timestamp: bigint }>;
  isAuthorizationUsed(auth: Authorization): Promise<boolean>;
  isAuthorizationCanceled(auth: Authorization): Promise<boolean>;
  /** The transaction that used the authorization and moved exactly `value` from payer to payTo. */
  findTransfer(auth: Authorization): Promise<TransferFound | undefined>;
  /** The block of a transaction still on the canonical chain, or undefined when it is gone. */
  transactionBlock(txHash: string): Promise<bigint | undefined>;
};

export function createChainReader(rpcUrl: string): ChainReader {
  const client: PublicClient = createPublicClient({
    chain: { id: CHAIN_ID, name: 'Base', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } },
    transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }),
  });
  const fromBlock = async () => {
    const latest = await client.getBlockNumber();
    return latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n;
  };
  const eventLogs = async (name: 'AuthorizationUsed' | 'AuthorizationCanceled', auth: Authorization) =>
    client.getContractEvents({
      address: getAddress(auth.asset),
      abi: eip3009Abi,
      eventName: name,
      args: { authorizer: getAddress(auth.payer), nonce: auth.nonce as Hex },
      fromBlock: await fromBlock(),
    });

  return {
    async latestBlock() {
      const block = await client.getBlock({ blockTag: 'latest' });
      return { number: block.number, timestamp: block.timestamp };
    },
    isAuthorizationUsed: (auth) =>
      client.readContract({
        address: getAddress(auth.asset),
        abi: eip3009Abi,
        functionName: 'authorizationState',
        args: [getAddress(auth.payer), auth.nonce as Hex],
      }),
    async isAuthorizationCanceled(auth) {
      return (await eventLogs('AuthorizationCanceled', auth)).length > 0;
    },
    async findTransfer(auth) {
      for (const used of await eventLogs('AuthorizationUsed', auth)) {
        const receipt = await client.getTransactionReceipt({ hash: used.transactionHash });
        if (receipt.status !== 'success') continue;
        const transfers = parseEventLogs({
          abi: eip3009Abi,
          eventName: 'Transfer',
          logs: receipt.logs.filter((l) => l.address.toLowerCase() === auth.asset.toLowerCase()),
        });
        const paid = transfers.some((t) => t.args.from.toLowerCase() === auth.payer && t.args.to.toLowerCase() === auth.payTo && t.args.value === auth.value);
        if (paid) return { txHash: used.transactionHash, blockNumber: receipt.blockNumber };
      }
      return undefined;
    },
    async transactionBlock(txHash) {
      try {
        const receipt = await client.getTransactionReceipt({ hash: txHash as Hex });
        return receipt.status === 'success' ? receipt.blockNumber : undefined;
      } catch (error) {
        if (error instanceof TransactionReceiptNotFoundError) return undefined;
        throw error;
      }
    },
  };
}
