// What `till listen` and `till trigger` share: a Till reached over its merchant API with an API key,
// from any machine (no database, no inbound port).
import { REQUEST_TIMEOUT_MS } from '../webhooks/deliver.ts';
import { takeOption, UsageError } from './output.ts';

export type TillApi = { baseUrl: string; apiKey: string; modeName: 'test' | 'live' };

/** The Till and the key of `--till` / `--api-key`, or TILL_URL (then TILL_BASE_URL) / TILL_API_KEY. */
export function tillApiOf(args: string[]): TillApi {
  const baseUrl = (takeOption(args, '--till') ?? process.env.TILL_URL ?? process.env.TILL_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
  const apiKey = takeOption(args, '--api-key') ?? process.env.TILL_API_KEY;
  if (!apiKey) throw new UsageError('an API key is needed: --api-key sk_test_… or TILL_API_KEY');
  const modeName = /^sk_(test|live)_/.exec(apiKey)?.[1] as TillApi['modeName'] | undefined;
  if (!modeName) throw new UsageError('the API key must be an sk_test_… or sk_live_… key');
  if (!/^https?:\/\/[^/]/.test(baseUrl)) throw new UsageError(`--till must be an http(s) URL, not ${JSON.stringify(baseUrl)}`);
  return { baseUrl, apiKey, modeName };
}

/** Till could not be reached, or answered as a server in trouble (5xx, 429): worth asking again. */
export class TillUnreachable extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, retryAfterMs?: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * One call of the merchant API. A network failure, a timeout, a 5xx or a 429 is TillUnreachable; any
 * other refusal (a key refused, a bad parameter) is a UsageError naming Till's own message.
 */
export async function callTill<T>(api: TillApi, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${api.baseUrl}${path}`, {
      method,
      headers: { 'x-sc-apikey': api.apiKey, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    throw new TillUnreachable((error as Error).name === 'TimeoutError' ? 'no answer in time' : (cause?.message ?? (error as Error).message));
  }
  const text = await response.text().catch(() => '');
  if (response.status >= 500 || response.status === 429) {
    const retryAfter = Number(response.headers.get('retry-after'));
    throw new TillUnreachable(`HTTP ${response.status}`, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TillUnreachable(`HTTP ${response.status} with a body that is not JSON`);
  }
  if (!response.ok) {
    const message = (json as { error?: { message?: string } }).error?.message ?? `HTTP ${response.status}`;
    throw new UsageError(`${api.baseUrl} refused ${method} ${path.split('?')[0]}: ${message}`);
  }
  return json as T;
}
