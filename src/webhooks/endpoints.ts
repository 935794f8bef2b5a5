import { randomBytes } from 'node:crypto';
import { TillError } from '../common/errors.ts';
import { openSecret, sealSecret, webhookSecretBinding } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { DEFAULT_EVENTS, EVENT_TYPES, type WebhookEventType } from './event-types.ts';

/** A refused webhook setting (URL or event list): an `invalid_field` naming the field. */
export class WebhookSettingsError extends TillError<'invalid_field'> {
  constructor(field: 'url' | 'events' | 'overlap', problem: string) {
    super('invalid_field', { field, problem });
  }
}

export type WebhookEndpoint = {
  merchantId: string;
  url: string;
  events: WebhookEventType[];
  webhookKey: string;
  signingSecret: string;
  /** Until when the signing secret before the last rotation still signs deliveries, if it does. */
  previousSecretUntil: number | null;
  disabledAt: number | null;
  disabledReason: string | null;
};

export function checkWebhookUrl(url: string, mode: Mode): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new WebhookSettingsError('url', `${JSON.stringify(url)} is not an absolute URL`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new WebhookSettingsError('url', 'must be http or https');
  if (mode === 'live' && parsed.protocol !== 'https:') throw new WebhookSettingsError('url', 'must be https outside the sandbox');
  if (parsed.username || parsed.password)
    throw new WebhookSettingsError('url', 'must not carry credentials; the receiver checks X-Webhook-Api-Key and the signature instead');
  return parsed.toString();
}

/**
 * Why nothing may be sent to `url` by a service in `mode`, checked at every delivery and not only
 * when the URL was saved: in live mode an http URL saved before (in the sandbox, or before https was
 * required) is never sent to, so neither the event nor the webhook key travel in clear text.
 * Undefined when it may be sent to (the SSRF guard still checks where it leads).
 */
export function deliveryRefusal(url: string, mode: Mode): string | undefined {
  try {
    checkWebhookUrl(url, mode);
    return undefined;
  } catch (error) {
    if (!(error instanceof WebhookSettingsError)) throw error;
    return mode === 'live' && /^http:/i.test(url)
      ? 'not sent: in live mode webhooks go to https URLs only, and this endpoint has an http URL'
      : `not sent: the webhook URL is refused (${error.message})`;
  }
}

export function checkEvents(events: readonly string[] | undefined): WebhookEventType[] {
  if (events === undefined) return [...DEFAULT_EVENTS];
  const unknown = events.find((e) => !(EVENT_TYPES as readonly string[]).includes(e));
  if (unknown !== undefined)
    throw new WebhookSettingsError('events', `names an unknown event type ${JSON.stringify(unknown)}; known: ${EVENT_TYPES.join(', ')}`);
  if (events.length === 0) throw new WebhookSettingsError('events', 'must name at least one event type');
  return [...new Set(events)] as WebhookEventType[];
}

const parseEvents = (column: string) => JSON.parse(column) as WebhookEventType[];

export const newWebhookKey = () => `whk_${randomBytes(24).toString('base64url')}`;
export const newSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** How long the previous signing secret keeps signing after a rotation: 24 hours unless chosen, at most 7 days. */
export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 7 * 24;

/** An overlap in hours as typed (CLI, form): a whole number from 0 to 168, or the default when empty. */
export function checkOverlapHours(value: string | number | undefined): number {
  if (value === undefined || value === '') return DEFAULT_OVERLAP_HOURS;
  const hours = typeof value === 'number' ? value : /^\d{1,4}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isInteger(hours) || hours < 0 || hours > MAX_OVERLAP_HOURS)
    throw new WebhookSettingsError('overlap', `must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS} (7 days)`);
  return hours;
}

/**
 * Sets the merchant's endpoint of `mode`, and re-enables it. The key, the signing secret and the
 * event list are kept across changes unless `rotate` is set or `events` given; the secrets are
 * returned so they can be shown again. A merchant has one endpoint per mode, each with its own URL,
 * key and secret: the other mode's is left as it is.
 * A rotation keeps the previous signing secret signing deliveries beside the new one for
 * `overlapHours` (default 24, at most 168; 0: not at all), as Standard Webhooks allows several
 * signatures in `webhook-signature`.
 */
export async function setWebhook(
  db: Db,
  secretKey: Buffer,
  merchantId: string,
  input: { url: string; events?: readonly string[]; rotate?: boolean; overlapHours?: number },
  mode: Mode,
  now = Date.now(),
): Promise<{ webhookKey: string; signingSecret: string }> {
  const url = checkWebhookUrl(input.url, mode);
  const existing = await db
    .selectFrom('webhook_endpoints')
    .select(['events', 'webhook_key_sealed', 'signing_secret_sealed'])
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .executeTakeFirst();
  const events = input.events === undefined && existing ? parseEvents(existing.events) : checkEvents(input.events);
  const keep = existing && !input.rotate;
  const webhookKey = keep ? openSecret(existing.webhook_key_sealed, secretKey, webhookSecretBinding(merchantId, 'webhook_key_sealed', mode)) : newWebhookKey();
  const signingSecret = keep
    ? openSecret(existing.signing_secret_sealed, secretKey, webhookSecretBinding(merchantId, 'signing_secret_sealed', mode))
    : newSigningSecret();
  const overlapHours = checkOverlapHours(input.overlapHours);
  // A rotation of an existing endpoint: its secret until now signs on for the overlap.
  const previous =
    existing && input.rotate && overlapHours > 0
      ? {
          previous_signing_secret_sealed: sealSecret(
            openSecret(existing.signing_secret_sealed, secretKey, webhookSecretBinding(merchantId, 'signing_secret_sealed', mode)),
            secretKey,
            webhookSecretBinding(merchantId, 'previous_signing_secret_sealed', mode),
          ),
          previous_signing_secret_expires_at: now + overlapHours * 3_600_000,
        }
      : !existing || input.rotate
        ? { previous_signing_secret_sealed: null, previous_signing_secret_expires_at: null }
        : {};
  const values = {
    ...previous,
    url,
    events: JSON.stringify(events),
    webhook_key_sealed: sealSecret(webhookKey, secretKey, webhookSecretBinding(merchantId, 'webhook_key_sealed', mode)),
    signing_secret_sealed: sealSecret(signingSecret, secretKey, webhookSecretBinding(merchantId, 'signing_secret_sealed', mode)),
    updated_at: now,
    disabled_at: null,
    disabled_reason: null,
  };
  await db
    .insertInto('webhook_endpoints')
    .values({ merchant_id: merchantId, created_at: now, mode, ...values })
    .onConflict((oc) => oc.columns(['merchant_id', 'mode']).doUpdateSet(values))
    .execute();
  return { webhookKey, signingSecret };
}

/** The merchant's endpoint of `mode`; the other mode's is another endpoint. */
export async function getWebhook(db: Db, secretKey: Buffer, merchantId: string, mode: Mode, now = Date.now()): Promise<WebhookEndpoint | undefined> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('merchant_id', '=', merchantId).where('mode', '=', mode).executeTakeFirst();
  if (!row) return undefined;
  return {
    merchantId,
    url: row.url,
    events: parseEvents(row.events),
    webhookKey: openSecret(row.webhook_key_sealed, secretKey, webhookSecretBinding(merchantId, 'webhook_key_sealed', mode)),
    signingSecret: openSecret(row.signing_secret_sealed, secretKey, webhookSecretBinding(merchantId, 'signing_secret_sealed', mode)),
    previousSecretUntil:
      row.previous_signing_secret_sealed !== null && row.previous_signing_secret_expires_at !== null && Number(row.previous_signing_secret_expires_at) > now
        ? Number(row.previous_signing_secret_expires_at)
        : null,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
  };
}

export async function disableWebhook(db: Db, merchantId: string, mode: Mode, reason: string, now: number): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ disabled_at: now, disabled_reason: reason, updated_at: now })
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('disabled_at', 'is', null)
    .execute();
}

/** The event types the merchant's endpoint of `mode` is subscribed to, disabled or not; undefined without one. */
export async function subscribedEvents(db: Db, mode: Mode, merchantId: string): Promise<WebhookEventType[] | undefined> {
  const row = await db.selectFrom('webhook_endpoints').select('events').where('merchant_id', '=', merchantId).where('mode', '=', mode).executeTakeFirst();
  return row && parseEvents(row.events);
}

/** Endpoints of `mode` whose URL is not https (`till doctor`: in live mode nothing is sent to them). */
export async function plainHttpEndpoints(db: Db, mode: Mode): Promise<{ merchantId: string; url: string }[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['merchant_id', 'url'])
    .where('mode', '=', mode)
    .where('url', 'not like', 'https://%')
    .orderBy('merchant_id')
    .execute();
  return rows.map((row) => ({ merchantId: row.merchant_id, url: row.url }));
}
