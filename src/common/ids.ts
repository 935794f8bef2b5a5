import { randomBytes } from 'node:crypto';

/**
 * 16 random bytes from a pool drawn 4 KiB at a time from the CSPRNG: a paid request makes several
 * ids, and one draw per id cost more than the id itself. Each byte is handed out once; a spent
 * pool is replaced, never refilled in place, so bytes handed out are never rewritten.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

export function random16(): Buffer {
  if (offset + 16 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  offset += 16;
  return pool.subarray(offset - 16, offset);
}

/** Prefixed, unguessable identifiers: 128 bits of randomness, never sequential. */
export function newId(prefix: string): string {
  return `${prefix}${random16().toString('base64url')}`;
}
