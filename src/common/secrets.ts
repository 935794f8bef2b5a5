import * as crypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Mode } from './modes.ts';

// One call, no Hash object (it runs on every API-key request), where Node has it (20.12 and later).
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

export function sha256Hex(value: string | Buffer): string {
  return oneShot ? oneShot('sha256', value, 'hex') : createHash('sha256').update(value).digest('hex');
}

/** Compares two strings without leaking, through timing, where they first differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

const KEY_ID = 'k1';
/** The same key, sealing with associated data: the stored form says which, so neither is read as the other. */
const BOUND_KEY_ID = 'k1b';

/**
 * AES-256-GCM for secrets that must be shown or sent again (webhook keys).
 * The stored form names the key it was sealed with so the key can rotate. With `boundTo` (where the
 * secret lives, e.g. its table, column and row), that text is authenticated as associated data: the
 * sealed value opens only for the same `boundTo`, so a value copied into another row or column (by
 * someone who can write the database but not read the key) is refused, not used.
 */
export function sealSecret(plaintext: string, key: Buffer, boundTo?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (boundTo !== undefined) cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [boundTo === undefined ? KEY_ID : BOUND_KEY_ID, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join(
    '.',
  );
}

/** Opens what sealSecret sealed, with the same `boundTo` (or none); throws for anything else. */
export function openSecret(sealed: string, key: Buffer, boundTo?: string): string {
  const [keyId, iv, body, tag] = sealed.split('.');
  if (keyId !== (boundTo === undefined ? KEY_ID : BOUND_KEY_ID) || !iv || !body || !tag)
    throw new Error(`sealed secret has an unknown format or key id${boundTo === undefined ? '' : ', or is not bound to where it is read'}`);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (boundTo !== undefined) decipher.setAAD(Buffer.from(boundTo, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

/** The sealed columns of `webhook_endpoints`. */
export type SealedWebhookColumn = 'webhook_key_sealed' | 'signing_secret_sealed' | 'previous_signing_secret_sealed';

/**
 * What a webhook secret is bound to (AES-GCM associated data): its endpoint's row — its merchant and
 * mode (a test endpoint's binding is the one every endpoint had before endpoints were per mode) — and
 * its column, so a sealed value copied into another row, mode or column no longer opens.
 */
export const webhookSecretBinding = (merchantId: string, column: SealedWebhookColumn, mode: Mode) =>
  `webhook_endpoints.${column}:${merchantId}${mode === 'live' ? ':live' : ''}`;

/** What a token-signing private key is bound to (AES-GCM associated data): its row. */
export const signingKeyBinding = (kid: string) => `signing_keys.private_jwk_sealed:${kid}`;
