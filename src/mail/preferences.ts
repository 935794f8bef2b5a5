import type { Db } from '../db/index.ts';
import type { NoticeTopic } from './kinds.ts';

/**
 * The owner of `mail_preferences`: which notices each merchant user receives. A user without a row
 * receives every notice and no summary (a merchant expects to hear of its payments from the start;
 * a summary is asked for).
 */
export type NoticePreferences = { payments: boolean; refunds: boolean; attention: boolean; webhooks: boolean; summary: 'off' | 'daily' | 'weekly' };

export const DEFAULT_PREFERENCES: NoticePreferences = { payments: true, refunds: true, attention: true, webhooks: true, summary: 'off' };

export async function findPreferences(db: Db, userId: string): Promise<NoticePreferences> {
  const row = await db.selectFrom('mail_preferences').selectAll().where('user_id', '=', userId).executeTakeFirst();
  if (!row) return DEFAULT_PREFERENCES;
  return { payments: row.payments === 1, refunds: row.refunds === 1, attention: row.attention === 1, webhooks: row.webhooks === 1, summary: row.summary };
}

export async function savePreferences(db: Db, userId: string, preferences: NoticePreferences, now: number): Promise<void> {
  const values = {
    payments: Number(preferences.payments),
    refunds: Number(preferences.refunds),
    attention: Number(preferences.attention),
    webhooks: Number(preferences.webhooks),
    summary: preferences.summary,
    updated_at: now,
  };
  await db
    .insertInto('mail_preferences')
    .values({ user_id: userId, ...values })
    .onConflict((conflict) => conflict.column('user_id').doUpdateSet(values))
    .execute();
}

/** One notice turned off (a summary: no more summaries), as an unsubscribe link asks. */
export async function unsubscribe(db: Db, userId: string, topic: NoticeTopic, now: number): Promise<void> {
  const current = await findPreferences(db, userId);
  await savePreferences(db, userId, topic === 'summary' ? { ...current, summary: 'off' } : { ...current, [topic]: false }, now);
}

/** The merchant's users who receive notices of `topic`, with their addresses. */
export async function noticeRecipients(db: Db, merchantId: string, topic: Exclude<NoticeTopic, 'summary'>): Promise<{ userId: string; email: string }[]> {
  const rows = await db
    .selectFrom('users as u')
    .leftJoin('mail_preferences as p', 'p.user_id', 'u.id')
    .select(['u.id', 'u.email', `p.${topic} as wanted`])
    .where('u.merchant_id', '=', merchantId)
    .orderBy('u.created_at')
    .execute();
  return rows.filter((row) => row.wanted === null || row.wanted === 1).map((row) => ({ userId: row.id, email: row.email }));
}

/** Users who asked for a summary of `period`. */
export async function summaryRecipients(db: Db, period: 'daily' | 'weekly'): Promise<{ userId: string; merchantId: string; email: string }[]> {
  const rows = await db
    .selectFrom('users as u')
    .innerJoin('mail_preferences as p', 'p.user_id', 'u.id')
    .select(['u.id', 'u.merchant_id', 'u.email'])
    .where('p.summary', '=', period)
    .execute();
  return rows.map((row) => ({ userId: row.id, merchantId: row.merchant_id, email: row.email }));
}
