// A rehearsal of live mode: what `till serve` reaches in production, stood in for on this machine.
//
// Stand-ins, and why:
// - Coinbase's hosted x402 facilitator (https://api.cdp.coinbase.com/platform/v2/x402) and a Base
//   mainnet RPC node cannot be reached (no internet here, and no real money in tests). Both are
//   the sandbox (chain id 8453, the token at Base's real USDC address), behind one https server.
// - The facilitator answers as Coinbase documents its hosted one (src/testing/cdp-facilitator.ts):
//   Bearer JWTs signed with an Ed25519 key (the portal's default, what the rehearsal's service
//   uses) or an ECDSA key, as `@coinbase/cdp-sdk`'s `generateJwt` makes them (the code
//   `@coinbase/x402`'s `createAuthHeader` runs); its request checks (500-character descriptions,
//   the 1,000-unit floor, the signature pattern), its error bodies with a correlation id, and its
//   rejections as 400s. Answers of its bad days (402 payment_method_required, 429 with Retry-After,
//   HTML from a gateway, an empty body) are scripted by a test with `answerNext`.
// - TLS: a throwaway CA, made per rehearsal with the `openssl` CLI, signs a certificate for
//   localhost / 127.0.0.1 / ::1. Child processes trust it through NODE_EXTRA_CA_CERTS=caPath;
//   in-process clients through `fetch` (an undici Agent with the CA added).
//
// Host matching in `uris`: the expected host is the request's Host header, exactly as the client
// addressed the server, port included (`localhost:PORT`), which is what `new URL(url).host` gives.
// A JWT made for `localhost` without the port, or for `127.0.0.1:PORT` while the request went to
// `localhost:PORT`, is refused. (Against CDP itself the host is `api.cdp.coinbase.com`, no port.)
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, type KeyObject, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { Agent } from 'undici';
import type { Address } from 'viem';
import { BASE_USDC_ADDRESS } from '../common/network.ts';
import { type Sandbox, startSandbox } from '../sandbox/index.ts';
import { type CdpAnswer, cdpError, cdpRequestProblem, generateCdpApiKey, inCdpShape, verifyCdpAuthorization } from './cdp-facilitator.ts';
import { freePort } from './environment.ts';
import { answerWithLogRangeLimit, readRequestBody } from './rpc-log-range.ts';

/** The facilitator's route on CDP (`https://api.cdp.coinbase.com` + this). */
export const CDP_FACILITATOR_ROUTE = '/platform/v2/x402';

// ---------------------------------------------------------------------------------------------
// TLS

export type TestTls = {
  /** The throwaway CA's certificate file: NODE_EXTRA_CA_CERTS for child processes. */
  caPath: string;
  caPem: string;
  /** Certificate (SANs DNS:localhost, IP:127.0.0.1, IP:::1) and key of the https servers. */
  certPem: string;
  keyPem: string;
  /** Trusts the public roots and the throwaway CA. */
  dispatcher: Agent;
  /** The global fetch through `dispatcher`; give it to viem as `http(url, { fetchFn })`. */
  fetch: typeof fetch;
};

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new Error('the openssl CLI is needed to make the rehearsal certificates (apt-get install openssl)');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.toString('utf8') ?? e.message}`);
  }
}

/** Makes a throwaway CA and a localhost server certificate it signed (P-256, 2 days), in `dir`. */
export function createTestTls(dir: string): TestTls {
  mkdirSync(dir, { recursive: true });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=Till live rehearsal throwaway CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir);
  writeFileSync(
    join(dir, 'server.ext'),
    [
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      '',
    ].join('\n'),
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-set_serial',
      `0x${randomUUID().replaceAll('-', '')}`,
      '-days',
      '2',
      '-extfile',
      'server.ext',
      '-out',
      'server.pem',
    ],
    dir,
  );
  const caPath = join(dir, 'ca.pem');
  const caPem = readFileSync(caPath, 'utf8');
  const dispatcher = new Agent({ connect: { ca: [...rootCertificates, caPem] } });
  const trustingFetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => fetch(input, { ...init, dispatcher } as RequestInit)) as typeof fetch;
  return {
    caPath,
    caPem,
    certPem: readFileSync(join(dir, 'server.pem'), 'utf8'),
    keyPem: readFileSync(join(dir, 'server.key'), 'utf8'),
    dispatcher,
    fetch: trustingFetch,
  };
}

// ---------------------------------------------------------------------------------------------
// Forwarding over https

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value;
  }
  return kept;
}

function send(res: ServerResponse, answer: CdpAnswer): void {
  res.writeHead(answer.status, { 'cache-control': 'no-store', ...answer.headers });
  res.end(answer.body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/**
 * Streams one request to `target` and its answer back. A connection the upstream drops mid-answer
 * is dropped to the client too (as the sandbox's "drop the settle answer" fault intends); an
 * upstream that cannot be reached is a 502. A request whose body was read already sends `body`.
 */
function forward(req: IncomingMessage, res: ServerResponse, target: URL, headers: OutgoingHttpHeaders, agent: HttpAgent, body?: Buffer): void {
  const upstream = httpRequest(target, { method: req.method ?? 'GET', headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
    answer.pipe(res);
    answer.once('error', () => res.destroy());
    answer.once('aborted', () => res.destroy());
  });
  upstream.once('error', (error: NodeJS.ErrnoException) => {
    if (!res.headersSent && error.code === 'ECONNREFUSED') {
      sendJson(res, 502, { errorType: 'bad_gateway', errorMessage: `upstream ${target.origin} is not reachable` });
      return;
    }
    res.socket?.destroy();
  });
  // A client that gives up (e.g. a settle timeout) leaves the upstream request too.
  res.once('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  if (body) upstream.end(body);
  else req.pipe(upstream);
}

async function listenHttps(server: HttpsServer): Promise<number> {
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

async function closeServer(server: HttpsServer): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export type HttpsFront = {
  /** `https://localhost:PORT`: the target's paths, over TLS. */
  url: string;
  port: number;
  stop(): Promise<void>;
};

/**
 * A TLS-terminating reverse proxy on 127.0.0.1 (certificate for localhost) in front of an http
 * server, e.g. a `till serve` so TILL_BASE_URL can be https. Everything is streamed through; the
 * client's Host header is kept (so the target sees `localhost:PORT` of the front), and
 * X-Forwarded-Proto/-Host/-For are set, as a TLS terminator such as Caddy does.
 */
export async function startHttpsFront(targetHttpUrl: string, tls: Pick<TestTls, 'certPem' | 'keyPem'>): Promise<HttpsFront> {
  const target = new URL(targetHttpUrl);
  if (target.protocol !== 'http:') throw new Error(`the https front forwards to an http:// URL, not ${targetHttpUrl}`);
  const agent = new HttpAgent({ keepAlive: true });
  const server = createHttpsServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const url = new URL(req.url ?? '/', target);
    const headers = endToEnd(req.headers);
    headers['x-forwarded-proto'] = 'https';
    if (req.headers.host) headers['x-forwarded-host'] = req.headers.host;
    const client = req.socket.remoteAddress ?? '127.0.0.1';
    const previous = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = previous ? `${previous}, ${client}` : client;
    forward(req, res, url, headers, agent);
  });
  const port = await listenHttps(server);
  return {
    url: `https://localhost:${port}`,
    port,
    stop: async () => {
      await closeServer(server);
      agent.destroy();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The rehearsal

export type LiveRehearsalStats = {
  /** Calls that passed the JWT check and were forwarded, per facilitator endpoint. */
  facilitator: { supported: number; verify: number; settle: number };
  /** JSON-RPC posts forwarded (no auth is asked for, as with an RPC URL holding its key). */
  rpc: number;
  /** eth_getLogs calls refused for spanning more blocks than `rpcLogRangeLimit`. */
  rpcLogsRefused: number;
  /** Facilitator calls answered 401, with why (newest last). */
  refused: number;
  refusals: { method: string; path: string; reason: string }[];
};

export type LiveRehearsalOptions = {
  /** Where the CA, certificate and keys are written (created if missing). */
  dir: string;
  /** Where the token is; Base's USDC address by default. */
  tokenAddress?: string;
  /** The sandbox's test-only `/admin/*` (on its own http URL, `sandbox.url`) and `sandbox.faults`. */
  faultControls?: boolean;
  /**
   * Mine an empty block this often (0, the default: only on transactions). Live mode waits for
   * confirmations (TILL_FINALITY_CONFIRMATIONS, 10 by default): mine them with `sandbox.chain.mine`,
   * or set this (Base: 2000).
   */
  blockIntervalMs?: number;
  /**
   * `/rpc` refuses an eth_getLogs over more than this many blocks as Alchemy's free plan does on
   * Base (10): HTTP 200, JSON-RPC error -32600 "…up to a N block range. Based on your parameters,
   * this block range should work: [from, from + N - 1]" (src/testing/rpc-log-range.ts); in a batch,
   * only that call. Unset: every range is answered.
   */
  rpcLogRangeLimit?: number;
};

export type LiveRehearsal = {
  /** `https://localhost:PORT/platform/v2/x402`: TILL_FACILITATOR_URL. */
  facilitatorUrl: string;
  /** `https://localhost:PORT/rpc`: TILL_BASE_RPC_URL. */
  rpcUrl: string;
  /** `https://localhost:PORT`. */
  origin: string;
  /** `localhost:PORT`: the host the JWT's `uris` must name. */
  host: string;
  caPath: string;
  caPem: string;
  /** The global fetch trusting the throwaway CA (for viem: `http(url, { fetchFn: rehearsal.fetch })`). */
  fetch: typeof fetch;
  dispatcher: Agent;
  /** Environment a child process needs to trust the https URLs: `{ NODE_EXTRA_CA_CERTS: caPath }`. */
  childEnv: { NODE_EXTRA_CA_CERTS: string };
  /** An Ed25519 CDP API key the facilitator knows (the portal's default kind): CDP_API_KEY_ID… */
  apiKeyId: string;
  /** …and CDP_API_KEY_SECRET, base64 of its seed and public key. */
  apiKeySecret: string;
  /** An ECDSA (ES256) key the facilitator knows too: its secret as PKCS#8 PEM, and as SEC1 PEM. */
  ecKey: { id: string; secret: string; secretSec1: string };
  /** Another key pair, unknown to the facilitator. */
  wrongKey: { id: string; secret: string };
  /**
   * The next `times` calls of `endpoint` (1 by default) get `answer` instead of the facilitator's
   * own (after the JWT check; nothing is carried out): a bad day of the hosted facilitator.
   */
  answerNext(endpoint: 'verify' | 'settle' | 'supported', answer: CdpAnswer, times?: number): void;
  usdcAddress: Address;
  chainId: 8453;
  network: 'eip155:8453';
  /** The sandbox behind it (in this process): fund, balanceOf, chain controls, faults; its own `url` is plain http and unauthenticated. */
  sandbox: Sandbox;
  stats: LiveRehearsalStats;
  /** An https front (same CA) for another local http server, e.g. the Till service; stopped with the rehearsal. */
  httpsFrontFor(targetHttpUrl: string): Promise<HttpsFront>;
  stop(): Promise<void>;
};

const FACILITATOR_ENDPOINTS = { '/supported': 'GET', '/verify': 'POST', '/settle': 'POST' } as const;
type FacilitatorEndpoint = keyof typeof FACILITATOR_ENDPOINTS;

/**
 * Starts the sandbox with its token at Base's USDC address, and in front of it one https server:
 * the facilitator at CDP's path, asking for CDP-style JWTs, and the JSON-RPC at `/rpc`.
 */
export async function startLiveRehearsal(options: LiveRehearsalOptions): Promise<LiveRehearsal> {
  const tls = createTestTls(join(options.dir, 'tls'));
  const key = generateCdpApiKey('EdDSA');
  const ecKey = generateCdpApiKey('ES256');
  const wrongKey = generateCdpApiKey('EdDSA');
  const scripted: Record<'verify' | 'settle' | 'supported', CdpAnswer[]> = { verify: [], settle: [], supported: [] };
  writeFileSync(join(options.dir, 'cdp-api-key.json'), `${JSON.stringify({ id: key.id, privateKey: key.secret }, null, 2)}\n`, { mode: 0o600 });

  const sandbox = await startSandbox({
    tokenAddress: options.tokenAddress ?? BASE_USDC_ADDRESS,
    faultControls: options.faultControls ?? false,
    blockIntervalMs: options.blockIntervalMs ?? 0,
  });
  const upstream = new URL(sandbox.url);
  const agent = new HttpAgent({ keepAlive: true });
  const stats: LiveRehearsalStats = { facilitator: { supported: 0, verify: 0, settle: 0 }, rpc: 0, rpcLogsRefused: 0, refused: 0, refusals: [] };
  const askSandboxRpc = async (body: unknown): Promise<unknown> => {
    const answer = await fetch(new URL('/rpc', upstream), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return answer.json();
  };
  const upstreamHeaders = (req: IncomingMessage): OutgoingHttpHeaders => {
    const headers = endToEnd(req.headers);
    delete headers.authorization;
    headers.host = upstream.host;
    return headers;
  };

  /**
   * The sandbox facilitator's answer, read whole and put in CDP's shape. A connection the sandbox
   * drops (its "drop the settle answer" fault) is dropped to the client too, and a client that gives
   * up (a settle timeout) leaves the sandbox's request.
   */
  function askFacilitator(req: IncomingMessage, res: ServerResponse, name: 'verify' | 'settle' | 'supported', body: Buffer): void {
    const ask = httpRequest(new URL(`/facilitator/${name}`, upstream), { method: req.method ?? 'GET', headers: upstreamHeaders(req), agent }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.once('end', () => {
        const headers = Object.fromEntries(Object.entries(endToEnd(answer.headers)).map(([k, v]) => [k, String(v)]));
        delete headers['content-length'];
        send(res, inCdpShape(name, answer.statusCode ?? 502, Buffer.concat(chunks).toString('utf8'), headers));
      });
      answer.once('error', () => res.destroy());
      answer.once('aborted', () => res.destroy());
    });
    ask.once('error', () => res.socket?.destroy());
    res.once('close', () => {
      if (!res.writableFinished) ask.destroy();
    });
    ask.end(body);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'https://rehearsal').pathname;
    if (path === '/rpc') {
      if (method !== 'POST') return sendJson(res, 405, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'use POST' } });
      stats.rpc += 1;
      if (options.rpcLogRangeLimit === undefined) return forward(req, res, new URL('/rpc', upstream), upstreamHeaders(req), agent);
      const body = await readRequestBody(req);
      const limited = await answerWithLogRangeLimit(body.toString('utf8'), options.rpcLogRangeLimit, askSandboxRpc);
      if (!limited) return forward(req, res, new URL('/rpc', upstream), upstreamHeaders(req), agent, body);
      stats.rpcLogsRefused += limited.refused;
      return sendJson(res, 200, limited.body);
    }
    if (path.startsWith(`${CDP_FACILITATOR_ROUTE}/`)) {
      const endpoint = path.slice(CDP_FACILITATOR_ROUTE.length) as FacilitatorEndpoint;
      const wanted = FACILITATOR_ENDPOINTS[endpoint];
      if (wanted === undefined) return sendJson(res, 404, { errorType: 'not_found', errorMessage: `no facilitator endpoint ${path}` });
      if (method !== wanted) return sendJson(res, 405, { errorType: 'method_not_allowed', errorMessage: `use ${wanted}` });
      const verdict = await verifyCdpAuthorization(req.headers.authorization, { method, host: req.headers.host ?? '', path }, [key, ecKey]);
      if (!verdict.ok) {
        stats.refused += 1;
        stats.refusals.push({ method, path, reason: verdict.reason });
        req.resume();
        return send(res, cdpError(401, { errorType: 'unauthorized', errorMessage: `Unauthorized: ${verdict.reason}` }));
      }
      const name = endpoint.slice(1) as keyof LiveRehearsalStats['facilitator'];
      stats.facilitator[name] += 1;
      const body = await readRequestBody(req);
      const script = scripted[name].shift();
      if (script) return send(res, script);
      const problem = name === 'supported' ? undefined : cdpRequestProblem(name, body.toString('utf8'));
      if (problem) return send(res, problem);
      return askFacilitator(req, res, name, body);
    }
    return sendJson(res, 404, { errorType: 'not_found', errorMessage: `no endpoint ${method} ${path}` });
  }

  const server = createHttpsServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { errorType: 'internal', errorMessage: String(error) });
      else res.destroy();
    });
  });
  let port: number;
  try {
    port = await listenHttps(server);
  } catch (error) {
    await sandbox.stop();
    throw error;
  }
  const origin = `https://localhost:${port}`;
  const fronts: HttpsFront[] = [];

  return {
    facilitatorUrl: `${origin}${CDP_FACILITATOR_ROUTE}`,
    rpcUrl: `${origin}/rpc`,
    origin,
    host: `localhost:${port}`,
    caPath: tls.caPath,
    caPem: tls.caPem,
    fetch: tls.fetch,
    dispatcher: tls.dispatcher,
    childEnv: { NODE_EXTRA_CA_CERTS: tls.caPath },
    apiKeyId: key.id,
    apiKeySecret: key.secret,
    ecKey: { id: ecKey.id, secret: ecKey.secret, secretSec1: ecKey.secretSec1! },
    wrongKey: { id: wrongKey.id, secret: wrongKey.secret },
    answerNext: (endpoint, answer, times = 1) => {
      for (let i = 0; i < times; i++) scripted[endpoint].push(answer);
    },
    usdcAddress: sandbox.usdcAddress,
    chainId: sandbox.chainId,
    network: sandbox.network,
    sandbox,
    stats,
    httpsFrontFor: async (targetHttpUrl) => {
      const front = await startHttpsFront(targetHttpUrl, tls);
      fronts.push(front);
      return front;
    },
    stop: async () => {
      await Promise.all(fronts.map((front) => front.stop()));
      await closeServer(server);
      agent.destroy();
      await sandbox.stop();
      await tls.dispatcher.close();
    },
  };
}

/** The public key of a PEM private key (PKCS#8 or SEC1), e.g. to check JWTs made with a key from elsewhere. */
export function publicKeyOf(privateKeyPem: string): KeyObject {
  return createPublicKey(createPrivateKey(privateKeyPem));
}

/**
 * Everything `till serve` needs to run live against the rehearsal, on `port` behind an https front,
 * with the Ed25519 CDP key, and a reconciler quick enough for tests (3 confirmations, 300 ms passes,
 * 5 s settle timeout and grace): the environment of a child process, with `storage`'s database.
 */
export async function liveServiceEnv(rehearsal: LiveRehearsal, storage: Record<string, string>): Promise<{ env: NodeJS.ProcessEnv; front: HttpsFront }> {
  const port = await freePort();
  const front = await rehearsal.httpsFrontFor(`http://127.0.0.1:${port}`);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    ...storage,
    ...rehearsal.childEnv,
    PORT: String(port),
    TILL_BASE_URL: front.url,
    TILL_FACILITATOR: 'coinbase',
    TILL_FACILITATOR_URL: rehearsal.facilitatorUrl,
    CDP_API_KEY_ID: rehearsal.apiKeyId,
    CDP_API_KEY_SECRET: rehearsal.apiKeySecret,
    TILL_BASE_RPC_URL: rehearsal.rpcUrl,
    // Live only: test mode beside it would need a sandbox of its own (TILL_SANDBOX_URL).
    TILL_MODES: 'live',
    TILL_FINALITY_CONFIRMATIONS: '3',
    TILL_RECONCILE_INTERVAL_MS: '300',
    TILL_FACILITATOR_SETTLE_TIMEOUT_MS: '5000',
    TILL_RECONCILE_GRACE_MS: '5000',
    TILL_LOG_LEVEL: 'warn',
  };
  return { env, front };
}
