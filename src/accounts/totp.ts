import { createHmac, randomBytes } from 'node:crypto';
import { constantTimeEqual } from '../common/secrets.ts';

/**
 * Time-based one-time passwords (RFC 6238): HMAC-SHA1, 30-second steps, 6 digits, the parameters
 * every authenticator app takes from an `otpauth://` URI. Small enough to keep here rather than
 * depend on a library.
 */
export const TOTP_STEP_SECONDS = 30;
const DIGITS = 6;
/** A code of the step before or after is taken too: a phone's clock may be a little off. */
const DRIFT_STEPS = 1;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding, as authenticator apps read secrets. */
export function base32Encode(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error('not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 160 random bits (RFC 4226's recommendation), in base32. */
export const newTotpSecret = (): string => base32Encode(randomBytes(20));

export const totpStep = (now: number): number => Math.floor(now / 1000 / TOTP_STEP_SECONDS);

/** The code of one step (RFC 4226 HOTP with the step as counter). */
export function totpCode(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const digest = createHmac('sha1', base32Decode(secret)).update(counter).digest();
  const offset = digest[digest.length - 1]! & 0x0f;
  const binary = digest.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** DIGITS).padStart(DIGITS, '0');
}

/**
 * The step a typed code is of, among the steps around now (the latest first), or undefined when it
 * is none of them. Every candidate is compared, in constant time, whichever matches.
 */
export function matchingStep(secret: string, typed: string, now: number): number | undefined {
  const code = typed.replace(/\s/g, '');
  if (!/^\d{6}$/.test(code)) return undefined;
  const current = totpStep(now);
  let found: number | undefined;
  for (let step = current + DRIFT_STEPS; step >= current - DRIFT_STEPS; step--) {
    if (constantTimeEqual(totpCode(secret, step), code) && found === undefined) found = step;
  }
  return found;
}

/** The URI an authenticator app scans (the QR code) or is given by hand. */
export function otpauthUri(secret: string, issuer: string, account: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${DIGITS}&period=${TOTP_STEP_SECONDS}`;
}
