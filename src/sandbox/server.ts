// The sandbox's single HTTP surface:
//   GET  /healthz                      chain id, token address, latest block
//   POST /rpc                          Ethereum JSON-RPC (reads and raw transactions only)
//   GET  /facilitator/supported        x402 facilitator protocol, as a hosted facilitator serves it
//   POST /facilitator/verify|settle
//   POST /faucet {address, usdc}       mints test USDC → {address, usdc, txHash, balance}
//   GET  /tx/{hash}                    small block-explorer page for one transaction
//   /admin/*                           fault and chain controls (settle answers, RPC lag, time), when enabled
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { x402Facilitator } from '@x402/core/facilitator';
import { isPaymentPayload, isPaymentRequirements } from '@x402/core/schemas';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { type Address, formatUnits, getAddress, type Hex, isAddress, parseUnits } from 'viem';
import { z } from 'zod';
import type { SandboxChain } from './chain.ts';
import { SANDBOX_CHAIN_ID, SANDBOX_FAUCET_MAX_USDC, SANDBOX_USDC_DECIMALS } from './constants.ts';
import { EXPLORER_CSP, renderTransactionPage, TX_HASH_PATTERN } from './explorer.ts';
import { type FaultState, sandboxFaultsUpdateSchema } from './faults.ts';

const MAX_BODY_BYTES = 1_000_000;
const MAX_RPC_BATCH = 100;

/** A refusal, answered in the service API's one error shape: `{ error: { code, message, field? } }`. */
class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  constructor(status: number, code: string, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }

  toBody() {
    return { error: { code: this.code, message: this.message, ...(this.field ? { field: this.field } : {}) } };
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'body_too_large', 'request body is larger than 1 MB');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_json', 'request body is not valid JSON');
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || undefined;
    throw new HttpError(400, 'invalid_field', z.prettifyError(parsed.error), field);
  }
  return parsed.data;
}

/** Parses a positive USDC amount written in decimal ("100", "0.5"), at most 6 decimals. */
export function parseUsdcAmount(value: string): bigint {
  if (!/^\d{1,15}(\.\d{1,6})?$/.test(value)) {
    throw new HttpError(400, 'invalid_field', 'usdc must be a positive decimal amount with at most 6 decimals', 'usdc');
  }
  const amount = parseUnits(value, SANDBOX_USDC_DECIMALS);
  if (amount <= 0n || amount > SANDBOX_FAUCET_MAX_USDC * 10n ** BigInt(SANDBOX_USDC_DECIMALS)) {
    throw new HttpError(400, 'invalid_field', `usdc must be above 0 and at most ${SANDBOX_FAUCET_MAX_USDC}`, 'usdc');
  }
  return amount;
}

export type FaucetResult = { address: Address; usdc: string; txHash: Hex; balance: string };

export async function fundFromFaucet(chain: SandboxChain, address: string, usdc: string): Promise<FaucetResult> {
  if (!isAddress(address, { strict: false })) throw new HttpError(400, 'invalid_field', 'address must be a 0x… EVM address', 'address');
  const amount = parseUsdcAmount(usdc);
  const to = getAddress(address);
  const txHash = await chain.mintUsdc(to, amount);
  const balance = await chain.balanceOf(to);
  return {
    address: to,
    usdc: formatUnits(amount, SANDBOX_USDC_DECIMALS),
    txHash,
    balance: formatUnits(balance, SANDBOX_USDC_DECIMALS),
  };
}

const faucetSchema = z.object({
  address: z.string(),
  usdc: z.union([z.string(), z.number().positive().transform(String)]),
});

const facilitatorRequestSchema = z.object({
  paymentPayload: z.custom<PaymentPayload>((value) => isPaymentPayload(value), 'paymentPayload is not an x402 payment payload'),
  paymentRequirements: z.custom<PaymentRequirements>((value) => isPaymentRequirements(value), 'paymentRequirements are not x402 payment requirements'),
});

/** Standard read and raw-transaction methods only: no node-side signing, no chain manipulation. */
function isPublicRpcMethod(method: string): boolean {
  if (!/^(eth|net|web3)_/.test(method)) return false;
  return !/sign|sendTransaction|^eth_accounts$|^eth_coinbase$/i.test(method);
}

type RpcRequest = { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown };

async function answerRpc(chain: SandboxChain, request: RpcRequest) {
  const id = request.id ?? null;
  if (typeof request.method !== 'string') {
    return { jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid request' } };
  }
  if (!isPublicRpcMethod(request.method)) {
    return { jsonrpc: '2.0', id, error: { code: -32601, message: `Method ${request.method} is not available on the sandbox RPC` } };
  }
  try {
    const params = Array.isArray(request.params) ? request.params : [];
    const result = await chain.provider.request({ method: request.method, params });
    return { jsonrpc: '2.0', id, result: result ?? null };
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown; data?: unknown };
    return {
      jsonrpc: '2.0',
      id,
      error: {
        code: typeof e.code === 'number' ? e.code : -32603,
        message: typeof e.message === 'string' ? e.message : 'Internal error',
        ...(e.data !== undefined ? { data: e.data } : {}),
      },
    };
  }
}

const LATEST_TAGS = new Set(['latest', 'pending', 'safe', 'finalized']);
const BLOCK_PARAM_INDEX: Record<string, number> = {
  eth_call: 1,
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getTransactionCount: 1,
  eth_getStorageAt: 2,
  eth_estimateGas: 1,
};
const hex = (n: bigint) => `0x${n.toString(16)}`;
const blockOf = (value: unknown): bigint | undefined => (typeof value === 'string' && /^0x[0-9a-f]+$/i.test(value) ? BigInt(value) : undefined);

/**
 * The same request answered by a node `lag` blocks behind the head: `latest` is its head, and a
 * later block, its transactions' receipts and its logs do not exist there yet. Reads pinned to a
 * block it lacks fail as such a node fails them ("header not found").
 */
async function answerRpcBehind(chain: SandboxChain, request: RpcRequest, lag: number) {
  const id = request.id ?? null;
  const method = typeof request.method === 'string' ? request.method : '';
  const head = BigInt((await chain.provider.request({ method: 'eth_blockNumber', params: [] })) as string);
  const nodeHead = head > BigInt(lag) ? head - BigInt(lag) : 0n;
  const params = Array.isArray(request.params) ? [...request.params] : [];
  const beyond = (block: unknown) => {
    const number = blockOf(block);
    return number !== undefined && number > nodeHead;
  };
  const missing = { jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } };
  if (method === 'eth_blockNumber') return { jsonrpc: '2.0', id, result: hex(nodeHead) };
  if (method === 'eth_getBlockByNumber') {
    if (params[0] === undefined || LATEST_TAGS.has(params[0] as string)) params[0] = hex(nodeHead);
    else if (beyond(params[0])) return { jsonrpc: '2.0', id, result: null };
  }
  const blockIndex = BLOCK_PARAM_INDEX[method];
  if (blockIndex !== undefined) {
    const block = params[blockIndex];
    if (block === undefined || LATEST_TAGS.has(block as string)) params[blockIndex] = hex(nodeHead);
    else if (beyond(block)) return missing;
  }
  if (method === 'eth_getLogs' && params[0] && typeof params[0] === 'object') {
    const filter = { ...(params[0] as Record<string, unknown>) };
    if (filter.blockHash === undefined) {
      if (beyond(filter.fromBlock)) return { jsonrpc: '2.0', id, result: [] };
      if (filter.toBlock === undefined || LATEST_TAGS.has(filter.toBlock as string) || beyond(filter.toBlock)) filter.toBlock = hex(nodeHead);
      if (LATEST_TAGS.has(filter.fromBlock as string)) filter.fromBlock = hex(nodeHead);
      params[0] = filter;
    }
  }
  const answer = await answerRpc(chain, { ...request, params });
  // What the lagging node returns only knows blocks up to its head.
  const result = (answer as { result?: unknown }).result as { blockNumber?: unknown; number?: unknown } | unknown[] | null | undefined;
  if (Array.isArray(result)) return { ...answer, result: result.filter((log) => !beyond((log as { blockNumber?: unknown }).blockNumber)) };
  if (result && typeof result === 'object' && (beyond(result.blockNumber) || (method === 'eth_getBlockByHash' && beyond(result.number))))
    return { ...answer, result: null };
  return answer;
}

function answerRpcThroughBalancer(chain: SandboxChain, faults: FaultState, request: RpcRequest) {
  const lag = faults.nextRpcLag();
  return lag > 0 && typeof request.method === 'string' && isPublicRpcMethod(request.method) ? answerRpcBehind(chain, request, lag) : answerRpc(chain, request);
}

async function handleRpc(chain: SandboxChain, faults: FaultState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = await readJson(req);
  } catch (error) {
    if (error instanceof HttpError && error.code === 'invalid_json') {
      return sendJson(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    throw error;
  }
  if (Array.isArray(body)) {
    if (body.length === 0 || body.length > MAX_RPC_BATCH) {
      return sendJson(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid batch size' } });
    }
    const answers = [];
    for (const request of body) answers.push(await answerRpcThroughBalancer(chain, faults, (request ?? {}) as RpcRequest));
    return sendJson(res, 200, answers);
  }
  return sendJson(res, 200, await answerRpcThroughBalancer(chain, faults, (body ?? {}) as RpcRequest));
}

export type SandboxRequestHandlerOptions = {
  chain: SandboxChain;
  facilitator: x402Facilitator;
  faults: FaultState;
  /** Serve `/admin/*` (fault injection, chain time, snapshots). Off unless asked for. */
  faultControls: boolean;
};

export function createSandboxRequestHandler(options: SandboxRequestHandlerOptions) {
  const { chain, facilitator, faults } = options;

  async function verify(req: IncomingMessage, res: ServerResponse) {
    faults.stats.verifyRequests += 1;
    const parsed = facilitatorRequestSchema.safeParse(await readJson(req));
    if (!parsed.success) {
      return sendJson(res, 400, { isValid: false, invalidReason: 'invalid_payload', invalidMessage: z.prettifyError(parsed.error) });
    }
    const verdict = await facilitator.verify(parsed.data.paymentPayload, parsed.data.paymentRequirements);
    if (faults.faults.delayVerifyMs > 0) await sleep(faults.faults.delayVerifyMs);
    sendJson(res, 200, verdict);
  }

  async function settle(req: IncomingMessage, res: ServerResponse) {
    faults.stats.settleRequests += 1;
    const parsed = facilitatorRequestSchema.safeParse(await readJson(req));
    if (!parsed.success) {
      return sendJson(res, 400, {
        success: false,
        errorReason: 'invalid_payload',
        errorMessage: z.prettifyError(parsed.error),
        transaction: '',
        network: '',
      });
    }
    const { paymentPayload, paymentRequirements } = parsed.data;
    const fault = faults.faults.settleFault;
    if (fault === 'refuse') {
      return sendJson(res, 200, { success: false, errorReason: 'transaction_failed', transaction: '', network: paymentRequirements.network });
    }
    if (fault === 'unavailable') {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('Service Unavailable');
      return;
    }
    const result = await facilitator.settle(paymentPayload, paymentRequirements);
    if (result.success) faults.stats.settledTransactions.push(result.transaction);
    if (faults.faults.delaySettleMs > 0) await sleep(faults.faults.delaySettleMs);
    if (faults.takeDropSettleResponse()) {
      res.socket?.destroy();
      return;
    }
    if (!result.success || fault === 'none') return sendJson(res, 200, result);
    const unsettled = { success: false, transaction: result.transaction, network: result.network, payer: result.payer };
    switch (fault) {
      case 'wrong_hash':
        return sendJson(res, 200, { ...result, transaction: faults.stats.lastMintTransaction ?? result.transaction });
      case 'pending':
        return sendJson(res, 200, { ...unsettled, errorReason: 'settlement_pending', errorMessage: 'The settlement was submitted and is pending' });
      case 'error':
        return sendJson(res, 500, { ...unsettled, errorReason: 'unexpected_settle_error', errorMessage: 'The facilitator failed after submitting' });
      case 'bad_gateway':
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('Bad Gateway');
        return;
      case 'hang':
        // Held open until the caller gives up (or ten minutes pass), as a facilitator stuck after submitting.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 600_000);
          res.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        res.socket?.destroy();
        return;
    }
  }

  async function admin(path: string, req: IncomingMessage, res: ServerResponse) {
    if (req.method === 'GET' && path === '/admin/faults') return sendJson(res, 200, faults.snapshot());
    if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'use POST');
    switch (path) {
      case '/admin/faults':
        faults.update(parseBody(sandboxFaultsUpdateSchema, await readJson(req)));
        return sendJson(res, 200, faults.snapshot());
      case '/admin/chain/mine': {
        const { blocks } = parseBody(z.object({ blocks: z.number().int().min(1).max(10_000).default(1) }), await readJson(req));
        await chain.mine(blocks);
        return sendJson(res, 200, await chainHead(chain));
      }
      case '/admin/chain/increase-time': {
        const { seconds } = parseBody(
          z.object({
            seconds: z
              .number()
              .int()
              .min(1)
              .max(10 * 365 * 86_400),
          }),
          await readJson(req),
        );
        await chain.increaseTime(seconds);
        return sendJson(res, 200, await chainHead(chain));
      }
      case '/admin/token/relay': {
        const { data } = parseBody(z.object({ data: z.string().regex(/^0x[0-9a-fA-F]*$/) }), await readJson(req));
        return sendJson(res, 200, await chain.relayToToken(data as Hex));
      }
      case '/admin/chain/snapshot':
        return sendJson(res, 200, { snapshotId: await chain.snapshot() });
      case '/admin/chain/revert': {
        const { snapshotId } = parseBody(z.object({ snapshotId: z.string().min(1) }), await readJson(req));
        await chain.revert(snapshotId);
        return sendJson(res, 200, await chainHead(chain));
      }
    }
    throw new HttpError(404, 'not_found', 'no such sandbox admin endpoint');
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://sandbox').pathname;
    const method = req.method ?? 'GET';
    if (path === '/healthz' && method === 'GET') {
      return sendJson(res, 200, { status: 'ok', chainId: SANDBOX_CHAIN_ID, usdcAddress: chain.usdcAddress, ...(await chainHead(chain)) });
    }
    if (path === '/rpc' && method === 'POST') return handleRpc(chain, faults, req, res);
    if (path === '/facilitator/supported' && method === 'GET') return sendJson(res, 200, facilitator.getSupported());
    if (path === '/facilitator/verify' && method === 'POST') return verify(req, res);
    if (path === '/facilitator/settle' && method === 'POST') return settle(req, res);
    if (path === '/faucet' && method === 'POST') {
      const { address, usdc } = parseBody(faucetSchema, await readJson(req));
      const funded = await fundFromFaucet(chain, address, usdc);
      faults.stats.lastMintTransaction = funded.txHash;
      return sendJson(res, 200, funded);
    }
    if (path.startsWith('/tx/') && method === 'GET') {
      const hash = path.slice('/tx/'.length);
      if (!TX_HASH_PATTERN.test(hash)) throw new HttpError(404, 'not_found', 'not a transaction hash');
      const page = await renderTransactionPage(chain, hash as Hex);
      res.writeHead(page.status, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': EXPLORER_CSP,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-store',
      });
      res.end(page.html);
      return;
    }
    if (options.faultControls && path.startsWith('/admin/')) return admin(path, req, res);
    throw new HttpError(404, 'not_found', `no sandbox endpoint ${method} ${path}`);
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) return;
      if (error instanceof HttpError) return sendJson(res, error.status, error.toBody());
      console.error('sandbox request failed', error);
      sendJson(res, 500, { error: { code: 'internal_error', message: 'The sandbox failed to answer this request' } });
    });
  };
}

async function chainHead(chain: SandboxChain) {
  const block = await chain.publicClient.getBlock();
  return { blockNumber: block.number.toString(), blockTimestamp: Number(block.timestamp) };
}
