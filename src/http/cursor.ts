import { invalidField } from '../common/errors.ts';

/** A place in a list ordered by (creation time, id): the last row of a page. */
export type KeysetCursor = { createdAt: number; id: string };

/** A cursor as it travels: opaque (base64url of `<created ms>.<id>`). */
export const encodeCursor = (cursor: KeysetCursor): string => Buffer.from(`${cursor.createdAt}.${cursor.id}`).toString('base64url');

/** A cursor some list gave, read back; anything else is 400 naming `field`. */
export function decodeCursor(text: string, field = 'cursor'): KeysetCursor {
  const match = /^[A-Za-z0-9_-]+$/.test(text) ? /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(Buffer.from(text, 'base64url').toString('utf8')) : null;
  const cursor = match ? { createdAt: Number(match[1]), id: match[2]! } : undefined;
  // Only a cursor a list gave: one that decodes leniently to the same place is refused too.
  if (!cursor || encodeCursor(cursor) !== text) throw invalidField(field, 'is not a cursor this list gave');
  return cursor;
}
