// A rehearsal of live mode: what `till serve` reaches in production, stood in for on this machine.
//
// Stand-ins, and why:
// - Coinbase's hosted x402 facilitator (https://api.cdp.coinbase.com/platform/v2/x402) and a Base
//   mainnet RPC node cannot be reached (no internet here, and no real money in tests). Both are
//   the sandbox (chain id 8453, the token at Base's real USDC address), behind one https server.
// - The facilitator's authentication mirrors what CDP documents and what `@coinbase/cdp-sdk`'s
//   `generateJwt` signs (the code `@coinbase/x402`'s `createAuthHeader` runs): a Bearer JWT,
//   ES256, header `kid` = the API key id, claims `iss: "cdp"`, `sub` = the key id, `nbf`/`exp` at
//   most 120 s apart, and `uris` naming the request as "<METHOD> <host><path>". It is checked
//   against a throwaway API key made here; Coinbase's own checks may be stricter.
// - TLS: a throwaway CA, made per rehearsal with the `openssl` CLI, signs a certificate for
//   localhost / 127.0.0.1 / ::1. Child processes trust it through NODE_EXTRA_CA_CERTS=caPath;
//   in-process clients through `fetch` (an undici Agent with the CA added).
//
// Host matching in `uris`: the expected host is the request's Host header, exactly as the client
// addressed the server, port included (`localhost:PORT`), which is what `new URL(url).host` gives.
// A JWT made for `localhost` without the port, or for `127.0.0.1:PORT` while the request went to
// `localhost:PORT`, is refused. (Against CDP itself the host is `api.cdp.coinbase.com`, no port.)
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
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
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { Agent } from 'undici';
import type { Address } from 'viem';
import { BASE_USDC_ADDRESS } from '../common/network.ts';
import { type Sandbox, startSandbox } from '../sandbox/index.ts';
import { answerWithLogRangeLimit, readRequestBody } from './rpc-log-range.ts';

/** The facilitator's route on CDP (`https://api.cdp.coinbase.com` + this). */
export const CDP_FACILITATOR_ROUTE = '/platform/v2/x402';
/** The longest life CDP's SDK gives a JWT (its default `expiresIn`); a longer one is refused. */
export const CDP_JWT_MAX_LIFETIME_SECONDS = 120;

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
// CDP-style API keys and their JWTs

export type CdpApiKey = {
  /** The key id (`kid` and `sub` of its JWTs); a UUID, as CDP's portal gives. */
  id: string;
  /** PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the form `generateJwt` accepts as apiKeySecret. */
  secret: string;
  /**
   * The same private key as SEC1 PEM (`-----BEGIN EC PRIVATE KEY-----`), the form CDP's portal has
   * handed out for ECDSA keys. `@coinbase/x402` 2.1.0's `createAuthHeader` refuses it as is; a
   * service that accepts it must convert it to PKCS#8 first.
   */
  secretSec1: string;
  publicKey: KeyObject;
};

/** A throwaway ES256 (P-256) API key. */
export function generateCdpApiKey(): CdpApiKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    id: randomUUID(),
    secret: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    secretSec1: privateKey.export({ type: 'sec1', format: 'pem' }).toString(),
    publicKey,
  };
}

export type CdpAuthVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Checks an Authorization header as the stand-in for CDP does: `Bearer <JWT>` signed with ES256 by
 * `key`, header kid = key id, iss "cdp", sub = key id, nbf and exp present and at most 120 s apart,
 * not expired, and `uris` containing exactly "<METHOD> <host><path>" of this request.
 */
export async function verifyCdpAuthorization(
  authorization: string | undefined,
  request: { method: string; host: string; path: string },
  key: { id: string; publicKey: KeyObject },
  now: Date = new Date(),
): Promise<CdpAuthVerdict> {
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (!match?.[1]) return { ok: false, reason: authorization ? 'the Authorization header is not "Bearer <JWT>"' : 'no Authorization header' };
  const token = match[1];
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return { ok: false, reason: 'the JWT header cannot be decoded' };
  }
  if (header.alg !== 'ES256') return { ok: false, reason: `alg ${String(header.alg)} is not ES256` };
  if (header.kid !== key.id) return { ok: false, reason: `unknown API key id (kid ${String(header.kid)})` };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key.publicKey, {
      algorithms: ['ES256'],
      issuer: 'cdp',
      subject: key.id,
      requiredClaims: ['nbf', 'exp'],
      currentDate: now,
    }));
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, reason: 'the JWT has expired' };
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) return { ok: false, reason: 'the JWT signature does not verify with the API key' };
    if (error instanceof joseErrors.JOSEError) return { ok: false, reason: `the JWT is refused: ${error.code}: ${error.message}` };
    return { ok: false, reason: 'the JWT cannot be verified' };
  }
  const { nbf, exp, uris } = payload;
  if (typeof nbf !== 'number' || typeof exp !== 'number') return { ok: false, reason: 'nbf and exp must be numbers' };
  if (exp - nbf > CDP_JWT_MAX_LIFETIME_SECONDS || exp <= nbf) {
    return { ok: false, reason: `the JWT lives ${exp - nbf} s; at most ${CDP_JWT_MAX_LIFETIME_SECONDS} s is accepted` };
  }
  const expected = `${request.method.toUpperCase()} ${request.host}${request.path}`;
  if (!Array.isArray(uris) || !uris.includes(expected)) {
    return { ok: false, reason: `uris ${JSON.stringify(uris)} does not contain "${expected}"` };
  }
  return { ok: true };
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
  apiKeyId: string;
  /** PKCS#8 PEM (what `createAuthHeader` accepts). */
  apiKeySecret: string;
  /** The same key as SEC1 PEM (`-----BEGIN EC PRIVATE KEY-----`). */
  apiKeySecretSec1: string;
  /** Another key pair, unknown to the facilitator. */
  wrongKey: { id: string; secret: string };
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
  const key = generateCdpApiKey();
  const wrongKey = generateCdpApiKey();
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
      const verdict = await verifyCdpAuthorization(req.headers.authorization, { method, host: req.headers.host ?? '', path }, key);
      if (!verdict.ok) {
        stats.refused += 1;
        stats.refusals.push({ method, path, reason: verdict.reason });
        req.resume();
        return sendJson(res, 401, { errorType: 'unauthorized', errorMessage: `Unauthorized: ${verdict.reason}` });
      }
      stats.facilitator[endpoint.slice(1) as keyof LiveRehearsalStats['facilitator']] += 1;
      return forward(req, res, new URL(`/facilitator${endpoint}`, upstream), upstreamHeaders(req), agent);
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
    apiKeySecretSec1: key.secretSec1,
    wrongKey: { id: wrongKey.id, secret: wrongKey.secret },
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
