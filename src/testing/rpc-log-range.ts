// An RPC provider's plan that caps eth_getLogs, as Alchemy's free tier does on Base: a request over
// more blocks than the plan allows is answered HTTP 200 with a JSON-RPC error -32600 naming the limit
// and a range that works, e.g.
//   {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Under the Free tier plan, you can make
//    eth_getLogs requests with up to a 10 block range. Based on your parameters, this block range
//    should work: [0x1be4213, 0x1be421c]"}}
// "up to a N block range" counts both ends: [from, from + N - 1] is answered, one block more is not.
// Other providers refuse in other words (QuickNode: -32614 "eth_getLogs is limited to a 5 range";
// Infura: -32005 "query returned more than 10000 results. Try with this block range [0x…, 0x…]";
// mainnet.base.org: "block range too large"); the chain reader's tests play those.
import type { IncomingMessage } from 'node:http';

type RpcCall = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };

const HEAD_TAGS = new Set(['latest', 'pending', 'safe', 'finalized']);
const hex = (n: bigint) => `0x${n.toString(16)}`;

/** Alchemy's refusal of an eth_getLogs from `from` over more than `limit` blocks. */
export function logRangeRefusal(id: unknown, limit: number, from: bigint) {
  return {
    jsonrpc: '2.0',
    id: id ?? null,
    error: {
      code: -32600,
      message: `Under the Free tier plan, you can make eth_getLogs requests with up to a ${limit} block range. Based on your parameters, this block range should work: [${hex(from)}, ${hex(from + BigInt(limit) - 1n)}]`,
    },
  };
}

export async function readRequestBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The blocks an eth_getLogs filter spans, tags read against `head`; undefined for a block hash or a filter the node itself must refuse. */
async function spanOf(filter: unknown, head: () => Promise<bigint>): Promise<{ from: bigint; blocks: bigint } | undefined> {
  if (!filter || typeof filter !== 'object') return undefined;
  const { fromBlock = 'latest', toBlock = 'latest', blockHash } = filter as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown };
  if (blockHash !== undefined) return undefined;
  const block = async (value: unknown) => {
    if (value === 'earliest') return 0n;
    if (typeof value === 'string' && HEAD_TAGS.has(value)) return head();
    return typeof value === 'string' && /^0x[0-9a-f]+$/i.test(value) ? BigInt(value) : undefined;
  };
  const [from, to] = [await block(fromBlock), await block(toBlock)];
  if (from === undefined || to === undefined || to < from) return undefined;
  return { from, blocks: to - from + 1n };
}

/**
 * How a provider capping eth_getLogs at `limit` blocks answers a JSON-RPC body (one call or a
 * batch): each eth_getLogs over more blocks is refused, every other call is answered by `upstream`
 * (the node behind it). Undefined when nothing is refused: the body goes to the node unchanged.
 */
export async function answerWithLogRangeLimit(
  raw: string,
  limit: number,
  upstream: (body: unknown) => Promise<unknown>,
): Promise<{ body: unknown; refused: number } | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const calls = (Array.isArray(parsed) ? parsed : [parsed]) as RpcCall[];
  let head: Promise<bigint> | undefined;
  const readHead = () => {
    head ??= upstream({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }).then((answer) => BigInt((answer as { result: string }).result));
    return head;
  };
  const refusals = new Map<number, ReturnType<typeof logRangeRefusal>>();
  for (const [index, call] of calls.entries()) {
    if (call?.method !== 'eth_getLogs' || !Array.isArray(call.params)) continue;
    const span = await spanOf(call.params[0], readHead);
    if (span && span.blocks > BigInt(limit)) refusals.set(index, logRangeRefusal(call.id, limit, span.from));
  }
  if (refusals.size === 0) return undefined;
  if (!Array.isArray(parsed)) return { body: refusals.get(0), refused: 1 };
  const rest = calls.filter((_, index) => !refusals.has(index));
  const answered = rest.length > 0 ? ((await upstream(rest)) as { id?: unknown }[]) : [];
  const byId = new Map(answered.map((answer) => [JSON.stringify(answer.id ?? null), answer]));
  return {
    body: calls.map((call, index) => refusals.get(index) ?? byId.get(JSON.stringify(call?.id ?? null))),
    refused: refusals.size,
  };
}
