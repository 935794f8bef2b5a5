import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { type Dispatcher, request } from 'undici';
import { ForbiddenTargetError, type TargetAllowance } from '../common/ssrf.ts';

export const REQUEST_TIMEOUT_MS = 15_000;
const EXCERPT_BYTES = 1024;
/** Read at most this much of a response, so a receiver cannot make the worker download a large body. */
const READ_LIMIT_BYTES = 64 * 1024;

export type AttemptOutcome = {
  startedAt: number;
  latencyMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** Retry-After in milliseconds, when given on 429 or 503. */
  retryAfterMs: number | null;
  /** The SSRF guard refused the target: nothing was sent. */
  refused: boolean;
  /** Nothing can be sent to this URL as it stands (an http URL in live mode): failed at once, never retried. */
  unsendable?: true;
};

/** The operator's webhook settings as the SSRF guard's allowance, its refusals naming the setting that would allow the target. */
export function webhookTargetAllowance(settings: Pick<TargetAllowance, 'allowLoopbackTargets' | 'allowPrivateTargets'>): TargetAllowance {
  return {
    allowLoopbackTargets: settings.allowLoopbackTargets,
    allowPrivateTargets: settings.allowPrivateTargets,
    allowedBy: {
      loopback: 'allowed by TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS, on by default in the sandbox',
      private: 'allowed only by TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS',
    },
  };
}

export type WebhookMessage = { url: string; eventId: string; body: string; webhookKey: string; signingSecret: string; previousSigningSecret?: string };

/**
 * The headers of one attempt: the spec's key, and Standard Webhooks' id, timestamp and v1 signature;
 * within the overlap after a rotation, a second signature with the previous secret, space-separated.
 */
export function webhookHeaders(
  message: Pick<WebhookMessage, 'eventId' | 'body' | 'webhookKey' | 'signingSecret' | 'previousSigningSecret'>,
  at: Date,
): Record<string, string> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signed = `${message.eventId}.${timestamp}.${message.body}`;
  const signatures = [message.signingSecret, ...(message.previousSigningSecret ? [message.previousSigningSecret] : [])].map(
    (secret) => `v1,${createHmac('sha256', signingKey(secret)).update(signed, 'utf8').digest('base64')}`,
  );
  return {
    'content-type': 'application/json',
    'user-agent': 'Till-Webhooks/1',
    'x-webhook-api-key': message.webhookKey,
    'webhook-id': message.eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signatures.join(' '),
  };
}

/** Signing keys of the endpoints signed for lately; a few, so a worker's key objects do not pile up. */
const signingKeys = new Map<string, KeyObject>();
const SIGNING_KEYS_KEPT = 64;

/**
 * The HMAC key of a Standard Webhooks secret: the base64 after `whsec_`. Signed with node:crypto
 * rather than the reference library's JavaScript SHA-256 (the same bytes, a fraction of the CPU),
 * with the key object of a secret made once while it signs deliveries (making it costs more than
 * the HMAC of a body); the tests verify every delivery with the reference library.
 */
function signingKey(secret: string): KeyObject {
  let key = signingKeys.get(secret);
  if (!key) {
    const bytes = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    if (bytes.length === 0) throw new Error("a webhook signing secret can't be empty");
    key = createSecretKey(bytes);
    if (signingKeys.size >= SIGNING_KEYS_KEPT) signingKeys.delete(signingKeys.keys().next().value!);
    signingKeys.set(secret, key);
  }
  return key;
}

export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    if (total < EXCERPT_BYTES) chunks.push(chunk as Buffer);
    total += (chunk as Buffer).length;
    if (total >= READ_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}

/** One POST of one event. Never throws: a network error, a timeout or a refusal is an outcome. */
export async function postWebhook(dispatcher: Dispatcher, message: WebhookMessage, timeoutMs = REQUEST_TIMEOUT_MS): Promise<AttemptOutcome> {
  const startedAt = Date.now();
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const response = await request(message.url, {
      method: 'POST',
      dispatcher,
      headers: webhookHeaders(message, new Date(startedAt)),
      body: message.body,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const excerpt = await readExcerpt(response.body);
    const status = response.statusCode;
    return {
      startedAt,
      latencyMs: latency(),
      statusCode: status,
      error: status === 200 ? null : `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
      responseExcerpt: excerpt,
      retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after'], Date.now()) : null,
      refused: false,
    };
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    const reason = (error as Error).name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (cause?.message ?? (error as Error).message);
    const refused = error instanceof ForbiddenTargetError || cause instanceof ForbiddenTargetError;
    return { startedAt, latencyMs: latency(), statusCode: null, error: reason, responseExcerpt: null, retryAfterMs: null, refused };
  }
}
