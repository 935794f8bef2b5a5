import {
  createPublicClient,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  pad,
  parseAbi,
  parseEventLogs,
  TransactionReceiptNotFoundError,
  toEventSelector,
} from 'viem';
import { CHAIN_ID } from '../common/network.ts';

const eip3009Abi = parseAbi([
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
]);
const AUTHORIZATION_USED = toEventSelector('AuthorizationUsed(address,bytes32)');
const AUTHORIZATION_CANCELED = toEventSelector('AuthorizationCanceled(address,bytes32)');

/**
 * Blocks per `eth_getLogs` request. Public Base RPCs refuse wide ranges (several cap a request at
 * 2,000 or 10,000 blocks; some free tiers at 500 or less), so every search is split into ranges of
 * this many blocks (about 17 minutes of Base).
 */
export const LOG_RANGE_BLOCKS = 500n;

export type Authorization = { asset: string; payer: string; payTo: string; value: bigint; nonce: string };
export type Block = { number: bigint; timestamp: bigint };
export type AuthorizationEvent = { kind: 'used' | 'canceled'; txHash: Hex; blockNumber: bigint };
/** What a transaction's receipt says of one authorization's transfer. */
export type TransferCheck = { kind: 'absent' } | { kind: 'holds'; blockNumber: bigint } | { kind: 'lacks'; blockNumber: bigint };

/**
 * What the chain says about EIP-3009 authorizations, read over the Base RPC: facts only. Every read
 * a decision rests on is pinned to one block, so an RPC whose nodes disagree about the head (a load
 * balancer in front of a lagging node) answers consistently or not at all.
 */
export type ChainReader = {
  head(): Promise<bigint>;
  block(number: bigint): Promise<Block>;
  /** Whether the authorization was used or cancelled in or before `block` (USDC marks both as used). */
  authorizationState(auth: Authorization, block: bigint): Promise<boolean>;
  /** The authorization's AuthorizationUsed and AuthorizationCanceled events in [from, to], searched in ranges of LOG_RANGE_BLOCKS. */
  authorizationEvents(auth: Authorization, from: bigint, to: bigint): Promise<AuthorizationEvent[]>;
  /** Whether a transaction is on chain, succeeded, and used this authorization to move exactly `value` from payer to payTo. */
  checkTransfer(txHash: string, auth: Authorization): Promise<TransferCheck>;
};

export function createChainReader(rpcUrl: string): ChainReader {
  const client: PublicClient = createPublicClient({
    chain: { id: CHAIN_ID, name: 'Base', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } },
    transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }),
  });
  return {
    head: () => client.getBlockNumber({ cacheTime: 0 }),
    async block(number) {
      const block = await client.getBlock({ blockNumber: number });
      return { number: block.number, timestamp: block.timestamp };
    },
    authorizationState: (auth, block) =>
      client.readContract({
        address: getAddress(auth.asset),
        abi: eip3009Abi,
        functionName: 'authorizationState',
        args: [getAddress(auth.payer), auth.nonce as Hex],
        blockNumber: block,
      }),
    async authorizationEvents(auth, from, to) {
      const found: AuthorizationEvent[] = [];
      for (let start = from; start <= to; start += LOG_RANGE_BLOCKS) {
        const end = start + LOG_RANGE_BLOCKS - 1n < to ? start + LOG_RANGE_BLOCKS - 1n : to;
        const logs = await client.request({
          method: 'eth_getLogs',
          params: [
            {
              address: getAddress(auth.asset),
              topics: [[AUTHORIZATION_USED, AUTHORIZATION_CANCELED], pad(getAddress(auth.payer)), auth.nonce as Hex],
              fromBlock: `0x${start.toString(16)}`,
              toBlock: `0x${end.toString(16)}`,
            },
          ],
        });
        for (const log of logs) {
          if (!log.transactionHash || !log.blockNumber) continue;
          found.push({ kind: log.topics[0] === AUTHORIZATION_USED ? 'used' : 'canceled', txHash: log.transactionHash, blockNumber: BigInt(log.blockNumber) });
        }
      }
      return found;
    },
    async checkTransfer(txHash, auth) {
      let receipt: Awaited<ReturnType<typeof client.getTransactionReceipt>>;
      try {
        receipt = await client.getTransactionReceipt({ hash: txHash as Hex });
      } catch (error) {
        if (error instanceof TransactionReceiptNotFoundError) return { kind: 'absent' };
        throw error;
      }
      if (receipt.status !== 'success') return { kind: 'absent' };
      const logs = parseEventLogs({ abi: eip3009Abi, logs: receipt.logs.filter((l) => l.address.toLowerCase() === auth.asset.toLowerCase()) });
      const payer = auth.payer.toLowerCase();
      const used = logs.some((l) => l.eventName === 'AuthorizationUsed' && l.args.authorizer.toLowerCase() === payer && l.args.nonce === auth.nonce);
      const paid = logs.some(
        (l) =>
          l.eventName === 'Transfer' &&
          l.args.from.toLowerCase() === payer &&
          l.args.to.toLowerCase() === auth.payTo.toLowerCase() &&
          l.args.value === auth.value,
      );
      return used && paid ? { kind: 'holds', blockNumber: receipt.blockNumber } : { kind: 'lacks', blockNumber: receipt.blockNumber };
    },
  };
}

/**
 * The last block at or before `seconds` (chain time), by interpolation on timestamps with a
 * bisection fallback: a few reads on a chain with a steady block time such as Base. `known` caches
 * what was read, so the lookups of one pass share their reads.
 */
export async function blockAtTime(chain: Pick<ChainReader, 'block'>, seconds: bigint, top: Block, known: Map<bigint, Block> = new Map()): Promise<bigint> {
  const read = async (n: bigint) => {
    let block = known.get(n);
    if (!block) {
      block = await chain.block(n);
      known.set(n, block);
    }
    return block;
  };
  if (top.timestamp <= seconds) return top.number;
  let low = await read(0n);
  if (low.timestamp > seconds) return 0n;
  let high = top;
  // Invariant: low.timestamp <= seconds < high.timestamp.
  for (let step = 0; high.number - low.number > 1n; step++) {
    const span = high.number - low.number;
    const guess =
      step % 2 === 0 && high.timestamp > low.timestamp
        ? low.number + ((seconds - low.timestamp) * span) / (high.timestamp - low.timestamp)
        : low.number + span / 2n;
    const middle = await read(guess <= low.number ? low.number + 1n : guess >= high.number ? high.number - 1n : guess);
    if (middle.timestamp <= seconds) low = middle;
    else high = middle;
  }
  return low.number;
}
