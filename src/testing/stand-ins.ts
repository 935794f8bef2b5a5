// Small local servers that answer as a misconfigured live deployment's neighbours would: a Base
// Sepolia RPC, a token whose EIP-712 domain is not USDC's on Base, a facilitator settling other
// networks, an RPC plan that caps eth_getLogs. Stand-ins, because neither Base nor a hosted facilitator
// is reachable from here.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeAbiParameters, toFunctionSelector } from 'viem';

/**
 * A JSON-RPC node of Base Sepolia, or of Base with a token whose EIP-712 domain is not USDC's; its head
 * is block 16. eth_getLogs finds nothing, over any range unless `logs` says otherwise: a plan that
 * answers at most `limit` blocks (refusing more as QuickNode does: HTTP 413, -32614 "eth_getLogs is
 * limited to a N range"), or one that does not serve eth_getLogs at all (-32601, in geth's words).
 */
export function standInRpc(chainId: number, tokenName: string, logs: { limit: number } | 'unavailable' | undefined = undefined): Server {
  const nameSelector = toFunctionSelector('name()');
  const versionSelector = toFunctionSelector('version()');
  return createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const call = JSON.parse(body) as { id: number; method: string; params: [{ data?: string; input?: string; fromBlock?: string; toBlock?: string }] };
    if (call.method === 'eth_getLogs' && logs !== undefined) {
      const filter = call.params[0];
      const blocks = BigInt(filter.toBlock ?? '0x10') - BigInt(filter.fromBlock ?? '0x10') + 1n;
      const refusal =
        logs === 'unavailable'
          ? { status: 200, error: { code: -32601, message: 'the method eth_getLogs does not exist/is not available' } }
          : blocks > BigInt(logs.limit)
            ? { status: 413, error: { code: -32614, message: `eth_getLogs is limited to a ${logs.limit} range` } }
            : undefined;
      if (refusal) {
        res.writeHead(refusal.status, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: refusal.error }));
      }
    }
    const data = call.params?.[0]?.data ?? call.params?.[0]?.input ?? '';
    const text = (value: string) => encodeAbiParameters([{ type: 'string' }], [value]);
    const result =
      call.method === 'eth_chainId'
        ? `0x${chainId.toString(16)}`
        : call.method === 'eth_call' && data.startsWith(nameSelector)
          ? text(tokenName)
          : call.method === 'eth_call' && data.startsWith(versionSelector)
            ? text('2')
            : call.method === 'eth_blockNumber'
              ? '0x10'
              : call.method === 'eth_getLogs'
                ? []
                : undefined;
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify(
        result === undefined ? { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'not here' } } : { jsonrpc: '2.0', id: call.id, result },
      ),
    );
  });
}

/** A facilitator that settles `exact` on the networks given. */
export function standInFacilitator(networks: string[]): Server {
  return createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url?.endsWith('/supported'))
      return void res.end(JSON.stringify({ kinds: networks.map((network) => ({ x402Version: 2, scheme: 'exact', network })), extensions: [], signers: {} }));
    res.statusCode = 404;
    res.end('{}');
  });
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
