import { type Selectable, sql } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import type { MailOutboxTable } from '../db/schema.ts';
import type { MailData, OutboxMail } from './kinds.ts';

/**
 * The owner of `mail_outbox`: mails queued in the transaction of their cause, once per cause and
 * recipient; leased by the worker, and their results recorded only while the lease holds.
 */
export type NewMail = { mode: Mode; merchantId: string | null; userId: string | null; cause: string; recipient: string; data: MailData };

type Row = Selectable<MailOutboxTable>;

/** The longest error kept on a row (an SMTP server's answer can be long). */
const ERROR_MAX = 500;

/**
 * Queues a mail; call it inside the transaction of what caused it. A second mail of the same cause to
 * the same recipient is not queued: false then. (A worker without an SMTP server keeps it, KEPT.)
 */
export async function queueMail(trx: Db, mail: NewMail, now: number): Promise<boolean> {
  const inserted = await trx
    .insertInto('mail_outbox')
    .values({
      id: newId('ml_'),
      mode: mail.mode,
      merchant_id: mail.merchantId,
      user_id: mail.userId,
      kind: mail.data.kind,
      cause: mail.cause,
      recipient: mail.recipient.trim().toLowerCase(),
      data: JSON.stringify(mail.data),
      status: 'PENDING',
      next_attempt_at: now,
      lease_until: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      sent_at: null,
    })
    .onConflict((conflict) => conflict.columns(['cause', 'recipient']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export const toOutboxMail = (row: Row): OutboxMail => ({
  id: row.id,
  mode: row.mode,
  merchantId: row.merchant_id,
  userId: row.user_id,
  recipient: row.recipient,
  data: JSON.parse(row.data) as MailData,
  status: row.status,
  attempts: Number(row.attempts),
  lastError: row.last_error,
  createdAt: Number(row.created_at),
  sentAt: row.sent_at === null ? null : Number(row.sent_at),
});

/**
 * Leases up to `limit` due PENDING mails, each under its next attempt number (the fencing token its
 * result is recorded under), in one short statement that commits before anything is sent: SKIP
 * LOCKED keeps PostgreSQL's workers off each other's rows, and on SQLite the repeated conditions
 * make the update a compare-and-set. Never one of `held`, whose result is still on its way.
 */
export async function leaseDueMails(
  db: Db,
  skipLocked: boolean,
  limit: number,
  leaseMs: number,
  now: number,
  held: ReadonlySet<string>,
): Promise<OutboxMail[]> {
  const lock = skipLocked ? sql`FOR UPDATE SKIP LOCKED` : sql``;
  const notHeld = held.size > 0 ? sql`AND id NOT IN (${sql.join([...held])})` : sql``;
  const leased = await sql<Row>`
    UPDATE mail_outbox SET attempts = attempts + 1, lease_until = ${now + leaseMs}, updated_at = ${now}
    WHERE id IN (
      SELECT id FROM mail_outbox
      WHERE status = 'PENDING' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now}) ${notHeld}
      ORDER BY next_attempt_at LIMIT ${limit} ${lock})
    AND status = 'PENDING' AND (lease_until IS NULL OR lease_until < ${now})
    RETURNING *`.execute(db);
  return leased.rows.map(toOutboxMail);
}

export type MailResult = { status: 'SENT' } | { status: 'KEPT' } | { status: 'PENDING'; error: string; retryAt: number } | { status: 'FAILED'; error: string };

/** Records a leased mail's result, only while it is still PENDING under attempt `attempt`; false when the lease was lost. */
export async function recordMailResult(db: Db, id: string, attempt: number, result: MailResult, now: number): Promise<boolean> {
  const updated = await db
    .updateTable('mail_outbox')
    .set({
      status: result.status,
      lease_until: null,
      updated_at: now,
      ...(result.status === 'SENT' ? { sent_at: now, last_error: null } : {}),
      ...(result.status === 'PENDING' || result.status === 'FAILED' ? { last_error: result.error.slice(0, ERROR_MAX) } : {}),
      ...(result.status === 'PENDING' ? { next_attempt_at: result.retryAt } : {}),
    })
    .where('id', '=', id)
    .where('attempts', '=', attempt)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}

export type MailFilter = { merchantId?: string; status?: OutboxMail['status']; mode?: Mode; limit: number };

/** Mails, newest first. */
export async function listMails(db: Db, filter: MailFilter): Promise<OutboxMail[]> {
  let query = db.selectFrom('mail_outbox').selectAll();
  if (filter.merchantId !== undefined) query = query.where('merchant_id', '=', filter.merchantId);
  if (filter.status !== undefined) query = query.where('status', '=', filter.status);
  if (filter.mode !== undefined) query = query.where('mode', '=', filter.mode);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
  return rows.map(toOutboxMail);
}

/** A merchant's mails of `mode` that did not go: FAILED for good, or PENDING again after a refusal (with the next attempt), newest first. */
export async function listUndeliveredMails(
  db: Db,
  filter: { merchantId: string; mode: Mode; limit: number },
): Promise<(OutboxMail & { nextAttemptAt: number | null })[]> {
  const rows = await db
    .selectFrom('mail_outbox')
    .selectAll()
    .where('merchant_id', '=', filter.merchantId)
    .where('mode', '=', filter.mode)
    .where((eb) => eb.or([eb('status', '=', 'FAILED'), eb.and([eb('status', '=', 'PENDING'), eb('last_error', 'is not', null)])]))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit)
    .execute();
  return rows.map((row) => ({ ...toOutboxMail(row), nextAttemptAt: row.status === 'PENDING' ? Number(row.next_attempt_at) : null }));
}

export async function findMail(db: Db, id: string): Promise<OutboxMail | undefined> {
  const row = await db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toOutboxMail(row);
}

/** How many mails are in each status (the till_mails metric). */
export async function countMailsByStatus(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('mail_outbox')
    .select(['status', (eb) => eb.fn.countAll<number | bigint | string>().as('count')])
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
}
