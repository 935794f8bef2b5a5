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
  zeroAddress,
  zeroHash,
} from 'viem';
import { BASE, type Network } from '../common/network.ts';
import { chainReadError, narrowerRange, rangeRefusal } from './rpc-errors.ts';

const eip3009Abi = parseAbi([
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
]);
const AUTHORIZATION_USED = toEventSelector('AuthorizationUsed(address,bytes32)');
const AUTHORIZATION_CANCELED = toEventSelector('AuthorizationCanceled(address,bytes32)');

/**
 * Blocks per `eth_getLogs` request at first (about 17 minutes of Base). Providers cap the range, each
 * its own way (mainnet.base.org 2,000, Alchemy's free plan 10, QuickNode's 5), so a reader asks over
 * fewer blocks once its RPC refuses a range, and keeps to what it answered (see `logRange`).
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
 * balancer in front of a lagging node) answers consistently or not at all. A read that fails throws
 * a ChainReadError, which names the RPC as `https://host/…` only (never the key in its URL).
 */
export type ChainReader = {
  head(): Promise<bigint>;
  block(number: bigint): Promise<Block>;
  /** Whether the authorization was used or cancelled in or before `block` (USDC marks both as used). */
  authorizationState(auth: Authorization, block: bigint): Promise<boolean>;
  /**
   * The authorization's AuthorizationUsed and AuthorizationCanceled events in [from, to], searched in
   * ranges of `logRange()` blocks. A range the RPC refuses as too wide is asked again over the blocks
   * the refusal names, or half as many, down to one block; every block is searched, and any other
   * failure (or a refusal of one block) throws.
   */
  authorizationEvents(auth: Authorization, from: bigint, to: bigint): Promise<AuthorizationEvent[]>;
  /** Whether a transaction is on chain, succeeded, and used this authorization to move exactly `value` from payer to payTo. */
  checkTransfer(txHash: string, auth: Authorization): Promise<TransferCheck>;
  /** Blocks per eth_getLogs request: LOG_RANGE_BLOCKS until the RPC refuses a range, then the widest it was seen to answer. */
  logRange(): bigint;
  /**
   * Asks the RPC for `asset`'s logs over the newest LOG_RANGE_BLOCKS blocks (a filter that matches
   * nothing), narrowing as a search does, and answers the range it took (`logRange()` from then on).
   * Throws when even one block is refused.
   */
  probeLogRange(asset: string): Promise<bigint>;
};

export function createChainReader(rpcUrl: string, network: Network = BASE): ChainReader {
  const client: PublicClient = createPublicClient({
    chain: {
      id: network.chainId,
      name: network.name,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    },
    transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }),
  });
  const read = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw chainReadError(error, what, rpcUrl);
    }
  };
  let logRange = LOG_RANGE_BLOCKS;
  /** The logs of `address` and `topics` from `start` over at most `logRange` blocks up to `end`, narrowing on each refusal; and the last block searched. */
  const logsFrom = async (address: Hex, topics: (Hex | Hex[])[], start: bigint, end: bigint) => {
    for (;;) {
      const last = start + logRange - 1n < end ? start + logRange - 1n : end;
      const range = `eth_getLogs [${start}, ${last}]`;
      try {
        const logs = await client.request({
          method: 'eth_getLogs',
          params: [{ address, topics, fromBlock: `0x${start.toString(16)}`, toBlock: `0x${last.toString(16)}` }],
        });
        return { logs, last };
      } catch (error) {
        const asked = last - start + 1n;
        const refusal = asked > 1n ? rangeRefusal(error) : undefined;
        if (!refusal) throw chainReadError(error, range, rpcUrl);
        const narrower = narrowerRange(refusal, asked);
        // Searches run side by side: the narrowest range seen refused stays.
        if (narrower < logRange) logRange = narrower;
      }
    }
  };
  const head = () => read('eth_blockNumber', () => client.getBlockNumber({ cacheTime: 0 }));
  return {
    head,
    block: (number) =>
      read(`eth_getBlockByNumber ${number}`, async () => {
        const block = await client.getBlock({ blockNumber: number });
        return { number: block.number, timestamp: block.timestamp };
      }),
    authorizationState: (auth, block) =>
      read(`authorizationState at block ${block}`, () =>
        client.readContract({
          address: getAddress(auth.asset),
          abi: eip3009Abi,
          functionName: 'authorizationState',
          args: [getAddress(auth.payer), auth.nonce as Hex],
          blockNumber: block,
        }),
      ),
    async authorizationEvents(auth, from, to) {
      const found: AuthorizationEvent[] = [];
      const topics = [[AUTHORIZATION_USED, AUTHORIZATION_CANCELED], pad(getAddress(auth.payer)), auth.nonce as Hex];
      for (let start = from; start <= to; ) {
        const { logs, last } = await logsFrom(getAddress(auth.asset), topics, start, to);
        for (const log of logs) {
          if (!log.transactionHash || !log.blockNumber) continue;
          found.push({ kind: log.topics[0] === AUTHORIZATION_USED ? 'used' : 'canceled', txHash: log.transactionHash, blockNumber: BigInt(log.blockNumber) });
        }
        start = last + 1n;
      }
      return found;
    },
    checkTransfer: (txHash, auth) =>
      read(`eth_getTransactionReceipt ${txHash}`, async (): Promise<TransferCheck> => {
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
      }),
    logRange: () => logRange,
    async probeLogRange(asset) {
      const newest = await head();
      const start = newest >= LOG_RANGE_BLOCKS ? newest - LOG_RANGE_BLOCKS + 1n : 0n;
      await logsFrom(getAddress(asset), [AUTHORIZATION_USED, pad(zeroAddress), zeroHash], start, newest);
      return logRange;
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
