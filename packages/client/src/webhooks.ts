// Checks a delivery from Till as Standard Webhooks specify (webhook-id, webhook-timestamp,
// webhook-signature), and its X-Webhook-Api-Key, before its body is trusted.
import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { components } from './openapi.ts';

/** Every event's body, as delivered; `event` says which. */
export type TillEvent = components['schemas']['WebhookEventBody'];
export type TillEventType = TillEvent['event'];

export class WebhookVerificationError extends Error {}

export type WebhookVerificationOptions = {
  /**
   * The signing secret (`whsec_…`). During a rotation's overlap, the new and the old: a delivery
   * signed with either is accepted.
   */
  secret: string | readonly string[];
  /** The webhook key (X-Webhook-Api-Key); checked when given, likewise one or several. */
  webhookKey?: string | readonly string[];
};

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

const list = (value: string | readonly string[]) => (typeof value === 'string' ? [value] : [...value]);

function headerRecord(headers: HeaderBag): Record<string, string> {
  const entries: [string, string | string[] | undefined][] = [];
  if (headers instanceof Headers) headers.forEach((value, name) => void entries.push([name, value]));
  else entries.push(...Object.entries(headers));
  return Object.fromEntries(
    entries.filter((entry): entry is [string, string | string[]] => entry[1] !== undefined).map(([name, value]) => [name.toLowerCase(), String(value)]),
  );
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * The event of a delivery, once its signature (and its key, when given) are checked; throws
 * WebhookVerificationError otherwise, which the receiver answers with a 4xx so Till retries.
 * `body` is the raw request body, exactly as received: parse it only through this function.
 */
export function verifyWebhook(body: string | Uint8Array, headers: HeaderBag, options: WebhookVerificationOptions): TillEvent {
  const received = headerRecord(headers);
  if (options.webhookKey !== undefined) {
    const presented = received['x-webhook-api-key'] ?? '';
    if (!list(options.webhookKey).some((key) => sameText(presented, key))) throw new WebhookVerificationError('wrong or missing X-Webhook-Api-Key');
  }
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  let refusal: unknown;
  for (const secret of list(options.secret)) {
    try {
      const event = new Webhook(secret).verify(text, received);
      if (!isTillEvent(event)) throw new WebhookVerificationError('the signed body is not a Till event');
      return event;
    } catch (error) {
      refusal = error;
    }
  }
  if (refusal instanceof WebhookVerificationError) throw refusal;
  throw new WebhookVerificationError(`the signature does not verify: ${(refusal as Error | undefined)?.message ?? 'no secret given'}`);
}

/** Narrows a parsed body to a Till event of its type: `if (isTillEvent(event, 'payment.succeeded')) …`. */
export function isTillEvent<T extends TillEventType = TillEventType>(value: unknown, type?: T): value is TillEvent & { event: T } {
  if (value === null || typeof value !== 'object') return false;
  const event = value as Partial<TillEvent>;
  return (
    typeof event.id === 'string' &&
    typeof event.event === 'string' &&
    typeof event.paymentSessionId === 'string' &&
    (type === undefined || event.event === type)
  );
}
