import { randomBytes } from 'node:crypto';

/** Prefixed, unguessable identifiers: 128 bits of randomness, never sequential. */
export function newId(prefix: string): string {
  return `${prefix}${randomBytes(16).toString('base64url')}`;
}
