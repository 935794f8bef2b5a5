import { redactUrl, redactUrls } from '../common/redact.ts';

/**
 * What an RPC provider's refusal of an eth_getLogs range says, read from its words (the codes differ
 * from one provider to the next: -32600, -32602, -32005, -32614, -32000, -32701, 35). The texts are
 * the providers' own, as they answer on Base and other chains:
 * - a range that works: Alchemy "…up to a 10 block range. Based on your parameters, this block range
 *   should work: [0x…, 0x…]"; Infura "query returned more than 10000 results. Try with this block
 *   range [0x…, 0x…]."
 * - the most blocks it answers: QuickNode and mainnet.base.org "eth_getLogs is limited to a 5 range",
 *   Infura "range 1000000 exceeds limit of 10000", PublicNode "exceed maximum block range: 50000",
 *   Cloudflare "Max range: 800", dRPC "ranges over 10000 blocks are not supported on freetier", CDP
 *   "please limit the query to at most 1000 blocks", thirdweb "Maximum allowed number of requested
 *   blocks is 2000", Moonbeam "block range is too wide (maximum 1024)", Avalanche "…maximum is set to 2048";
 * - neither: "block range too large" (Base), "Block range is too large" (OP), "Block range limit
 *   exceeded." (Chainstack), or a cap on the logs answered ("query returned more than 10000
 *   results", "Log response size exceeded", "logs matched by query exceeds limit of 10000").
 */
const RANGE_THAT_WORKS = /\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]/i;
/** Caps on the logs answered, whose numbers count logs or bytes, not blocks. */
const RESULT_CAPS = [
  /returned more than [\d,.]+ results/i,
  /exceeds max results/i,
  /log response size exceeded/i,
  /response size should not greater than/i,
  /backend response too large/i,
  /logs matched by query exceeds limit/i,
];
const STATED_LIMITS = [
  /up to an? ([\d,.]+k?) block range/i,
  /limited to an? ([\d,.]+k?) (?:block )?range/i,
  /limited to ([\d,.]+k?) blocks?/i,
  /exceeds (?:the )?limit of ([\d,.]+k?)/i,
  /max(?:imum)? block range:? ([\d,.]+k?)/i,
  /max range: ([\d,.]+k?)/i,
  /maximum is set to ([\d,.]+k?)/i,
  /at most ([\d,.]+k?) blocks/i,
  /maximum allowed number of requested blocks is ([\d,.]+k?)/i,
  /too wide \(maximum ([\d,.]+k?)\)/i,
  /blocks? range, the limit is ([\d,.]+k?)/i,
  /ranges over ([\d,.]+k?) blocks/i,
  /block range greater than ([\d,.]+k?)/i,
  /block range exceeds ([\d,.]+k?)/i,
  /blocks distance: ([\d,.]+k?)/i,
  /range allowed for your plan \(\d+ > ([\d,.]+k?)\)/i,
];
const UNSTATED_LIMITS = [/block range (?:is )?too (?:large|wide|big|high)/i, /block range limit exceeded/i, /bigger than maxBlockRange/i];

/** A provider's refusal of an eth_getLogs range, with the blocks per request it names, if any. */
export type RangeRefusal = { blocks: bigint | undefined };

function count(text: string): bigint {
  const thousands = /k$/i.test(text);
  const digits = text.replace(/[,.k]/gi, '');
  return BigInt(digits) * (thousands ? 1000n : 1n);
}

/** The provider's words in a failed request (viem keeps them in `details` along its chain of causes). */
function providerWords(error: unknown): string {
  const words: string[] = [];
  for (let e = error as { details?: unknown; cause?: unknown } | undefined; e && typeof e === 'object'; e = e.cause as typeof e) {
    if (typeof e.details === 'string') words.push(e.details);
  }
  return words.join('\n');
}

/** Whether `error` is a provider refusing an eth_getLogs for its range, and the blocks it names; undefined for any other failure. */
export function rangeRefusal(error: unknown): RangeRefusal | undefined {
  const words = providerWords(error);
  const works = RANGE_THAT_WORKS.exec(words);
  if (works) return { blocks: BigInt(works[2]!) - BigInt(works[1]!) + 1n };
  if (RESULT_CAPS.some((cap) => cap.test(words))) return { blocks: undefined };
  for (const limit of STATED_LIMITS) {
    const stated = limit.exec(words);
    if (stated) return { blocks: count(stated[1]!) };
  }
  return UNSTATED_LIMITS.some((limit) => limit.test(words)) ? { blocks: undefined } : undefined;
}

/**
 * The blocks to ask next after `refusal` of a request over `asked` blocks (at least 2): the range the
 * provider names when it is narrower (counting both ends, as Alchemy does: "up to a 10 block range"
 * answers [n, n + 9]), else half. Always narrower, so a search ends at one block.
 */
export function narrowerRange(refusal: RangeRefusal, asked: bigint): bigint {
  if (refusal.blocks !== undefined && refusal.blocks >= 1n && refusal.blocks < asked) return refusal.blocks;
  return asked / 2n;
}

/**
 * A read of the chain that failed. Its message names the RPC as `https://host/…` only: an RPC URL
 * carries the provider's key in its path or query, and viem's own errors print the whole URL (and
 * keep it in their fields), so they are never passed on as they are.
 */
export class ChainReadError extends Error {
  override readonly name = 'ChainReadError';
  /** The JSON-RPC error code, when the RPC answered one. */
  readonly code: number | undefined;
  /** The HTTP status, when the RPC answered something else than 200. */
  readonly status: number | undefined;

  constructor(message: string, answer: { code?: number | undefined; status?: number | undefined } = {}) {
    super(message);
    this.code = answer.code;
    this.status = answer.status;
  }
}

type ErrorChain = { shortMessage?: unknown; message?: unknown; details?: unknown; code?: unknown; status?: unknown; cause?: unknown };

/** What went wrong, in a line: viem's summary, the HTTP status and JSON-RPC code, the provider's words, the network's. */
function failureLine(error: unknown): { line: string; code: number | undefined; status: number | undefined } {
  let code: number | undefined;
  let status: number | undefined;
  let details: string | undefined;
  let summary: string | undefined;
  let root: string | undefined;
  for (let e = error as ErrorChain | undefined; e && typeof e === 'object'; e = e.cause as ErrorChain | undefined) {
    if (typeof e.code === 'number') code ??= e.code;
    if (typeof e.status === 'number') status ??= e.status;
    if (typeof e.details === 'string' && e.details) details ??= e.details;
    const message = typeof e.shortMessage === 'string' ? e.shortMessage : typeof e.message === 'string' ? e.message.split('\n')[0] : undefined;
    summary ??= message;
    root = typeof e.message === 'string' ? e.message.split('\n')[0] : root;
  }
  const answered = [status !== undefined ? `HTTP ${status}` : '', code !== undefined ? `JSON-RPC error ${code}` : ''].filter(Boolean).join(', ');
  const said = details?.slice(0, 300);
  const line = [
    (summary ?? String(error)).replace(/\.$/, ''),
    answered ? ` (${answered})` : '',
    said ? `: ${said}` : '',
    root && root !== said && root !== summary ? ` — ${root.slice(0, 200)}` : '',
  ].join('');
  return { line, code, status };
}

/** `text` without the parts of `rpcUrl` that may be its key: its user, password, path segments and query values. */
function withoutUrlSecrets(text: string, rpcUrl: string): string {
  let url: URL;
  try {
    url = new URL(rpcUrl);
  } catch {
    return text;
  }
  const parts = [url.username, url.password, ...url.pathname.split('/'), ...[...url.searchParams.values()], url.hash.slice(1)]
    .map((part) => decodeURIComponent(part))
    .filter((part) => part.length >= 6);
  return parts.reduce((cleaned, part) => cleaned.replaceAll(part, '…'), redactUrls(text));
}

/** `error` from a read of `what` at `rpcUrl`, as a ChainReadError that names the RPC as `https://host/…` only. */
export function chainReadError(error: unknown, what: string, rpcUrl: string): ChainReadError {
  if (error instanceof ChainReadError) return error;
  const { line, code, status } = failureLine(error);
  return new ChainReadError(withoutUrlSecrets(`${what} at ${redactUrl(rpcUrl)} failed: ${line}`, rpcUrl), { code, status });
}

/**
 * Whether a failed read failed on the way to the chain (the RPC unreachable, slow, refusing the key
 * or the request) rather than on the chain (a call that reverted or found no contract).
 */
export function isRpcFailure(error: unknown): boolean {
  for (let e = error as (ErrorChain & { name?: unknown }) | undefined; e && typeof e === 'object'; e = e.cause as typeof e) {
    if (e.name === 'HttpRequestError' || e.name === 'TimeoutError') return true;
    if (e.name === 'RpcRequestError') return !/revert/i.test(String(e.details ?? ''));
  }
  return false;
}
