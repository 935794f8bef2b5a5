import type { Logger } from 'pino';
import { type Authorization, type Block, blockAtTime, type ChainReader } from './reader.ts';

/** Where the chain stands for one look: its head, and the block `confirmations` below it that decisions read. */
export type ChainView = { head: bigint; pinned: Block; known: Map<bigint, Block> };

/** How many times a pinned block the RPC answers "not found" is moved back before the look gives up. */
const PIN_TRIES = 6;
const BLOCK_NOT_FOUND = /could not be found|header not found|block not found|unknown block/i;

/**
 * The chain as one look reads it: its head, and the block `confirmations` below it. Behind a load
 * balancer one node may lag, knowing neither that block nor its header: the pin then moves back by
 * `confirmations` (at least one block) until a node answers, so the look goes on instead of failing
 * as a whole. An older pin only delays decisions: what a block shows, every later one shows too.
 */
export async function viewChain(chain: ChainReader, confirmations: bigint): Promise<ChainView> {
  const head = await chain.head();
  const step = confirmations > 0n ? confirmations : 1n;
  let number = head > confirmations ? head - confirmations : 0n;
  for (let tries = 1; ; tries++) {
    try {
      const pinned = await chain.block(number);
      return { head, pinned, known: new Map([[pinned.number, pinned]]) };
    } catch (error) {
      if (tries >= PIN_TRIES || number === 0n || !BLOCK_NOT_FOUND.test(error instanceof Error ? error.message : '')) throw error;
      number = number > step ? number - step : 0n;
    }
  }
}

/** An EIP-3009 authorization followed on chain: a buyer's payment or a merchant's refund. */
export type FollowedAuthorization = Authorization & {
  validBefore: bigint;
  /** A transaction the facilitator named for it, checked first. */
  reportedTxHash: string | null;
  /** For the log lines: whose authorization this is. */
  subject: Record<string, string>;
};

/** What one look at an authorization found. */
export type Finding =
  | { kind: 'transfer'; txHash: string; blockNumber: bigint }
  | { kind: 'canceled' }
  | { kind: 'expired' }
  | { kind: 'valid' }
  | { kind: 'used_not_found' };

/** The search for an authorization's events starts this long (chain time) before it was recorded: clocks differ. */
const RECORDED_SKEW_S = 600n;

/** The block an authorization's events are searched from: the chain's block when it was recorded, less the clocks' skew. */
export function searchStart(chain: ChainReader, view: ChainView, recordedAtMs: number): Promise<bigint> {
  const recordedAt = BigInt(Math.floor(recordedAtMs / 1000));
  return blockAtTime(chain, recordedAt > RECORDED_SKEW_S ? recordedAt - RECORDED_SKEW_S : 0n, view.pinned, view.known);
}

/**
 * What the chain says of one authorization, from reads pinned to the view's block (a transaction the
 * facilitator named is checked by its receipt). A transfer needs the transaction that used the
 * authorization and moved exactly its value to its recipient; "canceled" needs the cancellation,
 * "expired" the pinned block at or past validBefore with the authorization unused. Facts only: what
 * they mean for a payment or a refund is the caller's to decide.
 */
export async function examine(
  log: Pick<Logger, 'error'>,
  chain: ChainReader,
  view: ChainView,
  followed: FollowedAuthorization,
  from: bigint,
): Promise<Finding> {
  if (followed.reportedTxHash) {
    const check = await chain.checkTransfer(followed.reportedTxHash, followed);
    if (check.kind === 'holds') return { kind: 'transfer', txHash: followed.reportedTxHash, blockNumber: check.blockNumber };
    if (check.kind === 'lacks')
      log.error(
        { ...followed.subject, txHash: followed.reportedTxHash },
        'the facilitator named a transaction that does not hold this transfer; resolving it from the chain',
      );
  }
  if (!(await chain.authorizationState(followed, view.pinned.number))) {
    return view.pinned.timestamp >= followed.validBefore ? { kind: 'expired' } : { kind: 'valid' };
  }
  const events = await chain.authorizationEvents(followed, from, view.pinned.number);
  for (const event of events.filter((e) => e.kind === 'used')) {
    const check = await chain.checkTransfer(event.txHash, followed);
    if (check.kind === 'holds') return { kind: 'transfer', txHash: event.txHash, blockNumber: check.blockNumber };
  }
  return events.some((e) => e.kind === 'canceled') ? { kind: 'canceled' } : { kind: 'used_not_found' };
}

export function describe(finding: Finding): string {
  switch (finding.kind) {
    case 'transfer':
      return `transfer found in ${finding.txHash} (block ${finding.blockNumber})`;
    case 'canceled':
      return 'authorization cancelled on chain';
    case 'expired':
      return 'authorization unused at validBefore';
    case 'valid':
      return 'authorization unused and still valid';
    case 'used_not_found':
      return 'authorization used, but neither its transfer nor its cancellation found yet';
  }
}
