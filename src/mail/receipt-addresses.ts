import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';
import { normalizeAddress } from './address.ts';

/**
 * The owner of `mail_receipt_addresses`: where buyers asked for their receipts. An address given
 * when the session was made (`paymentId` null) receives the receipt of each of its payments; one
 * given for one payment, that payment's.
 */
export async function addReceiptAddress(db: Db, target: { sessionId: string; paymentId: string | null }, email: string, now: number): Promise<void> {
  await db
    .insertInto('mail_receipt_addresses')
    .values({ id: newId('mra_'), session_id: target.sessionId, payment_id: target.paymentId, email: normalizeAddress(email), created_at: now })
    .execute();
}

/** The session's own address (given at creation or by an update) replaced by `email`, or removed when null; the addresses given for one payment stay. */
export async function setSessionReceiptAddress(trx: Db, sessionId: string, email: string | null, now: number): Promise<void> {
  await trx.deleteFrom('mail_receipt_addresses').where('session_id', '=', sessionId).where('payment_id', 'is', null).execute();
  if (email !== null) await addReceiptAddress(trx, { sessionId, paymentId: null }, email, now);
}

/** Every address a payment's receipts go to, once each. */
export async function receiptAddresses(db: Db, sessionId: string, paymentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('mail_receipt_addresses')
    .select('email')
    .where('session_id', '=', sessionId)
    .where((eb) => eb.or([eb('payment_id', 'is', null), eb('payment_id', '=', paymentId)]))
    .execute();
  return [...new Set(rows.map((row) => row.email))];
}
