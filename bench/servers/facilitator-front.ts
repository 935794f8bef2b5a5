// The facilitator as the paid bench sees it, timing every call where the facilitator answers it.
// Two modes, chosen by the environment:
// - UPSTREAM=<url>: a front that forwards each call to a real facilitator (the sandbox's) over one
//   keep-alive connection pool and records how long the facilitator took to answer;
// - VERIFY_MS / SETTLE_MS: a stand-in of fixed, known latency that checks nothing and settles
//   nothing on chain: /verify answers valid (payer = the authorization's `from`) after VERIFY_MS,
//   /settle answers success with a random transaction hash after SETTLE_MS, /supported names the
//   exact scheme on Base. It is only for throughput and latency figures: whoever calls it is told
//   every proof is good, so it measures the caller's own cost, never its checks.
// GET /__timings answers the verify and settle durations (ms) recorded since the last read and
// forgets them, so each slice of the bench reads its own.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

const upstream = process.env.UPSTREAM;
const delays: Record<string, number> = { verify: Number(process.env.VERIFY_MS ?? 5), settle: Number(process.env.SETTLE_MS ?? 10) };
let timings: Record<'verify' | 'settle', number[]> = { verify: [], settle: [] };

const SUPPORTED = {
  kinds: [
    { x402Version: 2, scheme: 'exact', network: 'eip155:8453' },
    { x402Version: 1, scheme: 'exact', network: 'base' },
  ],
  extensions: [],
  signers: {},
};

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** The stand-in's answer: every proof valid, every settle a success with a fresh hash. */
async function standIn(operation: string, body: string): Promise<{ status: number; body: unknown }> {
  if (operation === 'supported') return { status: 200, body: SUPPORTED };
  const request = JSON.parse(body) as { paymentPayload?: { payload?: { authorization?: { from?: string } } }; paymentRequirements?: { network?: string } };
  const payer = request.paymentPayload?.payload?.authorization?.from;
  await sleep(delays[operation] ?? 0);
  if (operation === 'verify') return { status: 200, body: { isValid: true, payer } };
  return { status: 200, body: { success: true, transaction: `0x${randomBytes(32).toString('hex')}`, network: request.paymentRequirements?.network, payer } };
}

async function forwarded(method: string, path: string, body: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${upstream}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body } : {}) });
  return { status: response.status, body: await response.json() };
}

createServer(async (request, response) => {
  const path = new URL(request.url ?? '/', 'http://front').pathname;
  if (path === '/__timings') {
    const read = timings;
    timings = { verify: [], settle: [] };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(read));
    return;
  }
  const operation = path.slice(path.lastIndexOf('/') + 1);
  const body = await readBody(request);
  const started = performance.now();
  try {
    const answer = upstream ? await forwarded(request.method ?? 'GET', path, body) : await standIn(operation, body);
    if (operation === 'verify' || operation === 'settle') timings[operation].push(performance.now() - started);
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  } catch (error) {
    response.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: (error as Error).message }));
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
