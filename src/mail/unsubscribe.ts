import { createHmac, timingSafeEqual } from 'node:crypto';
import type { NoticeTopic } from './kinds.ts';

/**
 * Unsubscribe links need no sign-in (a mail client posts them, RFC 8058): each carries an HMAC of
 * the user and the notice under TILL_SECRET_KEY, so only the mail's recipient can use it, and it
 * turns off that one notice of that one user.
 */
export const UNSUBSCRIBE_PATH = '/mail/unsubscribe';

const TOPICS: readonly NoticeTopic[] = ['payments', 'refunds', 'attention', 'webhooks', 'summary'];

const tokenOf = (secretKey: Buffer, userId: string, topic: NoticeTopic) =>
  createHmac('sha256', secretKey).update(`mail-unsubscribe\n${userId}\n${topic}`).digest('base64url');

export function unsubscribeUrl(baseUrl: string, secretKey: Buffer, userId: string, topic: NoticeTopic): string {
  const query = new URLSearchParams({ user: userId, topic, token: tokenOf(secretKey, userId, topic) });
  return `${baseUrl}${UNSUBSCRIBE_PATH}?${query}`;
}

/** The user and notice an unsubscribe link names, when its token is theirs; undefined otherwise. */
export function readUnsubscribe(secretKey: Buffer, query: Record<string, unknown>): { userId: string; topic: NoticeTopic } | undefined {
  const { user, topic, token } = query;
  if (typeof user !== 'string' || typeof token !== 'string' || typeof topic !== 'string' || !TOPICS.includes(topic as NoticeTopic)) return undefined;
  const expected = Buffer.from(tokenOf(secretKey, user, topic as NoticeTopic));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected) ? { userId: user, topic: topic as NoticeTopic } : undefined;
}
