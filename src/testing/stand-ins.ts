// Small local servers that answer as a misconfigured live deployment's neighbours would: a Base
// Sepolia RPC, a token whose EIP-712 domain is not USDC's on Base, a facilitator settling other
// networks. Stand-ins, because neither Base nor a hosted facilitator is reachable from here.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeAbiParameters, toFunctionSelector } from 'viem';

/** A JSON-RPC node of Base Sepolia, or of Base with a token whose EIP-712 domain is not USDC's. */
export function standInRpc(chainId: number, tokenName: string): Server {
  const nameSelector = toFunctionSelector('name()');
  const versionSelector = toFunctionSelector('version()');
  return createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const call = JSON.parse(body) as { id: number; method: string; params: [{ data?: string; input?: string }] };
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
