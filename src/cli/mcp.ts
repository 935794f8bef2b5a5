// `till mcp login`: a development client of Till's own MCP server. It runs the OAuth flow a coding
// agent runs (discovery, a Client ID Metadata Document, authorization code with PKCE S256, the code
// on a loopback redirect) and prints an access token to try the server with, e.g. in the MCP
// Inspector. Its document is served on 127.0.0.1, which the service accepts only with
// TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS=true (sandbox only); such a client is given test data only.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';

const USAGE = 'mcp commands: login [--url SERVICE_URL] [--scope "settings:read orders:read"] [--port N] [--no-open] [--timeout SECONDS] [--json]';
const DEFAULT_SCOPE = 'settings:read orders:read';
const CLIENT_NAME = 'till mcp login (development client)';

/**
 * The MCP Inspector release the printed command runs. Pinned: on Node 20, an unpinned `npx` picks
 * the last release that declares Node 20 support (0.15), whose CLI refuses arguments for a URL
 * server; this one runs on Node 20 as on newer ones (src/mcp/inspector.test.ts runs it on Node 20).
 * test/tools/mcp-inspector/ installs the same version for the test suite.
 */
export const MCP_INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';

/** The Inspector command `till mcp login` prints: the server's tools, listed with the token. */
export const inspectorCommand = (mcpUrl: string, accessToken: string) =>
  `npx -y ${MCP_INSPECTOR} --cli ${mcpUrl} --transport http --header "Authorization: Bearer ${accessToken}" --method tools/list`;

type Discovered = { resource: string; issuer: string; authorizationEndpoint: string; tokenEndpoint: string };
type Tokens = { access_token: string; token_type: string; expires_in: number; refresh_token?: string; scope?: string };

const fail = (message: string) => new UsageError(message);

async function getJson(url: string, what: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/json' } });
  } catch (error) {
    throw fail(`${what} could not be fetched from ${url}: ${(error as Error).message}. Is the service running?`);
  }
  if (!response.ok) throw fail(`${what} at ${url} answered HTTP ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

/** The MCP endpoint's 401 names its resource metadata (RFC 9728), which names the authorization server (RFC 8414). */
async function discover(mcpEndpoint: string): Promise<Discovered> {
  let challenge: string | null;
  try {
    const answer = await fetch(mcpEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    challenge = answer.status === 401 ? answer.headers.get('www-authenticate') : null;
  } catch (error) {
    throw fail(`the MCP endpoint ${mcpEndpoint} could not be reached: ${(error as Error).message}. Is the service running?`);
  }
  const metadataUrl = challenge && /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  if (!metadataUrl) throw fail(`${mcpEndpoint} did not answer 401 with a resource_metadata challenge; is it Till's MCP endpoint?`);
  const resource = await getJson(metadataUrl, 'the protected resource metadata');
  const issuer = (resource.authorization_servers as string[] | undefined)?.[0];
  if (typeof resource.resource !== 'string' || !issuer) throw fail(`${metadataUrl} names no resource or authorization server`);
  const server = await getJson(`${issuer.replace(/\/+$/, '')}/.well-known/oauth-authorization-server`, 'the authorization server metadata');
  if (!(server.code_challenge_methods_supported as string[] | undefined)?.includes('S256'))
    throw fail(`the authorization server ${issuer} does not offer PKCE S256`);
  return {
    resource: resource.resource,
    issuer: String(server.issuer),
    authorizationEndpoint: String(server.authorization_endpoint),
    tokenEndpoint: String(server.token_endpoint),
  };
}

type Loopback = { server: Server; clientId: string; redirectUri: string; callback: Promise<URLSearchParams> };

/** The client's site on 127.0.0.1: its metadata document, and the redirect URI the merchant's browser comes back to. */
async function serveLoopbackClient(port: number): Promise<Loopback> {
  let deliver: (params: URLSearchParams) => void = () => {};
  const callback = new Promise<URLSearchParams>((resolve) => {
    deliver = resolve;
  });
  let origin = '';
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', origin);
    if (request.method === 'GET' && url.pathname === '/client.json') {
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(
        JSON.stringify({
          client_id: `${origin}/client.json`,
          client_name: CLIENT_NAME,
          redirect_uris: [`${origin}/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
      return;
    }
    if (request.method === 'GET' && url.pathname === '/callback') {
      const done = url.searchParams.has('code');
      response
        .writeHead(done ? 200 : 400, { 'content-type': 'text/html; charset=utf-8', connection: 'close' })
        .end(
          `<!doctype html><meta charset="utf-8"><title>till mcp login</title><p>${done ? 'Authorized. You can close this tab and go back to the terminal.' : 'Not authorized; see the terminal.'}</p>`,
        );
      deliver(url.searchParams);
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, clientId: `${origin}/client.json`, redirectUri: `${origin}/callback`, callback };
}

/** The text of the error page's alert, when the authorization endpoint refuses the request outright. */
async function refusalOf(authorizationUrl: URL): Promise<string | undefined> {
  const answer = await fetch(authorizationUrl, { redirect: 'manual' });
  if (answer.status < 400) return undefined;
  const html = await answer.text();
  const alert = /<p role="alert"[^>]*>([\s\S]*?)<\/p>/.exec(html)?.[1] ?? `HTTP ${answer.status}`;
  return alert
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Opens the URL in a browser when this machine has an opener; otherwise the printed URL is enough. */
function openInBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? undefined : 'xdg-open';
  if (!opener) return;
  const found = (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, opener), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) return;
  const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
  child.on('error', () => {});
  child.unref();
}

async function exchangeCode(discovered: Discovered, form: Record<string, string>): Promise<Tokens> {
  const answer = await fetch(discovered.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form),
  });
  const body = (await answer.json()) as Tokens & { error?: string; error_description?: string };
  if (!answer.ok) throw fail(`the token endpoint refused the code: ${body.error ?? answer.status} ${body.error_description ?? ''}`.trim());
  return body;
}

function within<T>(promise: Promise<T>, seconds: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(fail(`${what} did not happen within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The service's URL when --url is not given: TILL_MCP_URL, TILL_BASE_URL, or the local default. */
function defaultServiceUrl(): string {
  return (process.env.TILL_MCP_URL || process.env.TILL_BASE_URL || `http://localhost:${process.env.PORT || '8080'}`).replace(/\/+$/, '');
}

async function login(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  const noOpen = takeFlag(args, '--no-open');
  const serviceUrl = (takeOption(args, '--url') ?? defaultServiceUrl()).replace(/\/+$/, '').replace(/\/mcp$/, '');
  const scope = takeOption(args, '--scope') ?? DEFAULT_SCOPE;
  const port = Number(takeOption(args, '--port') ?? '0');
  const timeoutSeconds = Number(takeOption(args, '--timeout') ?? '600');
  noneLeft(args);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw fail('--port must be a port number (0: any free port)');
  if (!(timeoutSeconds > 0)) throw fail('--timeout must be a number of seconds');
  if (!URL.canParse(serviceUrl)) throw fail(`--url ${serviceUrl} is not a URL`);

  const discovered = await discover(`${serviceUrl}/mcp`);
  const loopback = await serveLoopbackClient(port);
  try {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const authorizationUrl = new URL(discovered.authorizationEndpoint);
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: loopback.clientId,
      redirect_uri: loopback.redirectUri,
      scope,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state,
      resource: discovered.resource,
    }))
      authorizationUrl.searchParams.set(name, value);

    const refusal = await refusalOf(authorizationUrl);
    if (refusal)
      throw fail(
        `the authorization server refused this client: ${refusal}\n` +
          'till mcp login serves its client document on 127.0.0.1: start the service with TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS=true (sandbox only).',
      );
    process.stderr.write(
      `Open this URL in a browser, sign in as a user of the merchant, and allow access:\n\n  ${authorizationUrl.href}\n\nWaiting for the answer on ${loopback.redirectUri} …\n`,
    );
    if (!noOpen) openInBrowser(authorizationUrl.href);

    const answer = await within(loopback.callback, timeoutSeconds, 'the authorization');
    if (answer.get('state') !== state) throw fail('the answer came back with another state; start again');
    if (answer.has('iss') && answer.get('iss') !== discovered.issuer) throw fail(`the answer came from issuer ${answer.get('iss')}, not ${discovered.issuer}`);
    const code = answer.get('code');
    if (!code)
      throw fail(`authorization refused: ${answer.get('error') ?? 'no code'}${answer.has('error_description') ? ` (${answer.get('error_description')})` : ''}`);

    const tokens = await exchangeCode(discovered, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: loopback.redirectUri,
      code_verifier: verifier,
      client_id: loopback.clientId,
      resource: discovered.resource,
    });
    const mode = modeOfToken(tokens.access_token);
    const inspector = inspectorCommand(discovered.resource, tokens.access_token);
    printResult(
      json,
      {
        mcp_url: discovered.resource,
        client_id: loopback.clientId,
        access_token: tokens.access_token,
        token_type: tokens.token_type,
        expires_in: tokens.expires_in,
        scope: tokens.scope ?? null,
        mode,
        refresh_token: tokens.refresh_token ?? null,
      },
      [
        `Authorized for ${discovered.resource} with the scopes: ${tokens.scope ?? scope}${mode ? `, on ${mode} data` : ''}.`,
        `Access token (valid ${Math.round(tokens.expires_in / 60)} minutes):`,
        '',
        tokens.access_token,
        '',
        ...(tokens.refresh_token
          ? [
              `Refresh token (rotated at each use; POST it to ${discovered.tokenEndpoint} with grant_type=refresh_token and client_id=${loopback.clientId}):`,
              tokens.refresh_token,
              '',
            ]
          : []),
        'Send it on every call as: Authorization: Bearer <access token>. For example, with the MCP Inspector:',
        '',
        `  ${inspector}`,
        '',
        `or with curl:  curl -s ${discovered.resource} -H "Authorization: Bearer ${tokens.access_token}" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`,
      ].join('\n'),
    );
  } finally {
    // Answers already written (the browser's landing page) are sent before the server closes.
    await new Promise<void>((resolve) => loopback.server.close(() => resolve()));
  }
}

/** The mode an access token names (its `mode` claim: `test` or `live`), read without verifying it: only to be shown. */
function modeOfToken(accessToken: string): string | null {
  try {
    const claims = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { mode?: unknown };
    return typeof claims.mode === 'string' ? claims.mode : null;
  } catch {
    return null;
  }
}

/** `till mcp …`: development tools for the MCP server. */
export async function mcpCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub === 'login') return login(args);
  throw new UsageError(USAGE);
}
