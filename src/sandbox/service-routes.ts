import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { invalidField, TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { addRoute } from '../http/routes.ts';
import { validate } from '../http/validation.ts';

const FaucetBody = z.strictObject({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x address of 40 hex characters'),
  usdc: z.union([z.string(), z.number()]).transform(String).meta({ description: 'Test USDC to mint, e.g. "100"' }),
});

async function relay(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  const type = response.headers.get('content-type') ?? 'application/json';
  const csp = response.headers.get('content-security-policy');
  if (csp) reply.header('content-security-policy', csp);
  return reply
    .code(response.status)
    .type(type)
    .send(Buffer.from(await response.arrayBuffer()));
}

async function forward(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  } catch {
    throw new TillError('sandbox_unavailable');
  }
}

/**
 * The sandbox seen through the service: its chain RPC, faucet and transaction pages under
 * /sandbox/*, wherever test mode pays on a sandbox (beside live too: the test hosted page's wallet
 * and receipts use them). None of it exists without test mode.
 */
export function registerSandboxProxy(app: FastifyInstance, context: AppContext): void {
  const sandboxUrl = context.config.modes.includes('sandbox') ? context.config.sandboxUrl : undefined;
  if (!sandboxUrl) return;
  app.post('/sandbox/rpc', { bodyLimit: 256 * 1024 }, async (request, reply) =>
    relay(reply, await forward(`${sandboxUrl}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request.body) })),
  );
  addRoute(
    app,
    {
      method: 'POST',
      url: '/sandbox/faucet',
      tag: 'Sandbox',
      summary: 'Mint test USDC (sandbox only; fake money)',
      body: FaucetBody,
      responses: { 200: { description: '{ address, usdc, txHash, balance }' }, 400: { description: 'Bad address or amount' } },
    },
    {},
    async (request, reply) => {
      const body = validate(FaucetBody, request.body);
      return relay(
        reply,
        await forward(`${sandboxUrl}/faucet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      );
    },
  );
  app.get<{ Params: { hash: string } }>('/sandbox/tx/:hash', async (request, reply) => {
    if (!/^0x[0-9a-fA-F]{64}$/.test(request.params.hash)) throw invalidField('hash', 'must be a 0x transaction hash of 64 hex characters');
    return relay(reply, await forward(`${sandboxUrl}/tx/${request.params.hash}`));
  });
}
