import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Db } from '../db/index.ts';
import type { Mode } from '../db/schema.ts';
import { MAX_USDC_BASE_UNITS } from '../money/usdc.ts';
import type { SessionRow } from '../sessions/sessions.ts';
import type { Proof } from './payload.ts';
import { X402_ERRORS, type X402ErrorCode } from './protocol.ts';

/**
 * Refused payment proofs, recorded against their session so the merchant can see why a buyer's
 * payment did not go through (docs/x402.md, "Refused attempts"). A row names a payer only when that
 * payer signed the proof (its signature recovered to it, or the facilitator verified a smart
 * wallet's); any other refused proof, which anyone can send naming anyone, only adds one to the
 * session's count of unsigned refusals, one row that names nobody and is never pushed out. A
 * challenge, an unreadable header, a rate-limited request and a successful payment write nothing
 * here. Bounded: repeats of one payer with one refusal code are one row with a count, a session keeps
 * its last ATTEMPTS_PER_SESSION named rows, and the periodic sweep deletes rows not seen for
 * ATTEMPT_RETENTION_MS.
 */
export const ATTEMPTS_PER_SESSION = 20;
export const ATTEMPT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** The row that counts a session's refused proofs its named payer did not sign: no payer, one reason. */
const UNSIGNED = { payer: '', reason: 'unsigned' } as const;

/** The codes a decoded proof can be refused with, each said for the merchant (the buyer's words are the checkout page's). */
type RefusalCode = Exclude<
  X402ErrorCode,
  'payment_required' | 'amount_required' | 'amount_below_minimum' | 'invalid_payload' | 'conflicting_payment_headers' | 'payment_in_progress'
>;
export const REFUSAL_SENTENCES: Record<RefusalCode, string> = {
  unsupported_scheme: 'The wallet offered another kind of payment than the exact scheme.',
  wrong_network: 'The payment was signed for another network than Base.',
  wrong_pay_to: 'The payment was addressed to another wallet than your payout wallet.',
  wrong_asset: 'The payment was in another token than USDC.',
  wrong_resource: 'The payment was signed for another purchase.',
  amount_mismatch: 'The amount signed was not the current price: the price changed or its quote ran out.',
  session_changed: 'The payment was signed for the price before you changed it.',
  authorization_expired: 'The payment authorization ran out before it could be settled.',
  authorization_too_long: 'The payment authorization was valid for more than 10 minutes.',
  authorization_not_yet_valid: 'The payment authorization was not valid yet: the payer’s clock may be ahead.',
  invalid_signature: 'The signature did not match the payment: another key, or a changed field.',
  insufficient_funds: 'The payer’s wallet did not hold enough USDC for the payment.',
  nonce_used: 'The payment authorization had already been used.',
  payment_failed: 'The facilitator refused the payment.',
};

/** A refusal code in plain words for the merchant. */
export const refusalSentence = (code: string): string => REFUSAL_SENTENCES[code as RefusalCode] ?? X402_ERRORS[code as X402ErrorCode] ?? `Refused (${code}).`;

/** One row of a session's refused attempts, as the dashboard shows it. */
export type RefusedAttempt = { payer: string; reason: string; value: bigint | null; count: number; firstSeenAt: number; lastSeenAt: number };

/** A session's refused attempts: the rows of payers who signed, and how many refused proofs no payer was shown to sign. */
export type SessionAttempts = { signed: RefusedAttempt[]; unsigned: { count: number; firstSeenAt: number; lastSeenAt: number } | undefined };

/**
 * Records a refused proof against its session: a new row, or one more of a repeat; a proof its payer
 * did not sign, one more on the session's unsigned count. Never throws: a refusal is answered as a
 * refusal whether or not it could be recorded (a failure is logged).
 */
export async function recordRefusedProof(
  db: Db,
  refused: {
    session: Pick<SessionRow, 'id' | 'merchant_id' | 'mode'>;
    proof: Pick<Proof, 'from' | 'value'>;
    payerSigned: boolean;
    reason: X402ErrorCode;
    now: number;
  },
  log: FastifyBaseLogger,
): Promise<void> {
  const { session, proof, reason, now } = refused;
  const named = refused.payerSigned ? { payer: proof.from.toLowerCase(), reason } : UNSIGNED;
  const value = refused.payerSigned && proof.value <= MAX_USDC_BASE_UNITS ? proof.value : null;
  try {
    const row = await db
      .insertInto('payment_attempts')
      .values({
        id: newId('att_'),
        session_id: session.id,
        merchant_id: session.merchant_id,
        mode: session.mode,
        ...named,
        value,
        count: 1,
        first_seen_at: now,
        last_seen_at: now,
      })
      .onConflict((oc) => oc.columns(['session_id', 'payer', 'reason']).doUpdateSet({ count: sql`payment_attempts.count + 1`, value, last_seen_at: now }))
      .returning('count')
      .executeTakeFirst();
    // Only a new signed row can put the session over its bound.
    if (row?.count === 1 && refused.payerSigned) await keepLatest(db, session.id);
  } catch (error) {
    log.warn({ err: error, sessionId: session.id, reason }, 'a refused payment proof could not be recorded');
  }
}

/** Deletes a session's signed rows beyond its ATTEMPTS_PER_SESSION most recently seen (the unsigned count stays). */
async function keepLatest(db: Db, sessionId: string): Promise<void> {
  await db
    .deleteFrom('payment_attempts')
    .where('session_id', '=', sessionId)
    .where('payer', '!=', UNSIGNED.payer)
    .where('id', 'not in', (qb) =>
      qb
        .selectFrom('payment_attempts')
        .select('id')
        .where('session_id', '=', sessionId)
        .where('payer', '!=', UNSIGNED.payer)
        .orderBy('last_seen_at', 'desc')
        .orderBy('id', 'desc')
        .limit(ATTEMPTS_PER_SESSION),
    )
    .execute();
}

/** A merchant's session's refused attempts in the service's mode: the signed ones most recently seen first, and the unsigned count. */
export async function listRefusedAttempts(db: Db, mode: Mode, merchantId: string, sessionId: string): Promise<SessionAttempts> {
  const ofSession = db
    .selectFrom('payment_attempts')
    .select(['payer', 'reason', 'value', 'count', 'first_seen_at', 'last_seen_at'])
    .where('session_id', '=', sessionId)
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode);
  const [rows, unsigned] = await Promise.all([
    ofSession.where('payer', '!=', UNSIGNED.payer).orderBy('last_seen_at', 'desc').orderBy('id', 'desc').limit(ATTEMPTS_PER_SESSION).execute(),
    ofSession.where('payer', '=', UNSIGNED.payer).executeTakeFirst(),
  ]);
  return {
    signed: rows.map((r) => ({ payer: r.payer, reason: r.reason, value: r.value, count: r.count, firstSeenAt: r.first_seen_at, lastSeenAt: r.last_seen_at })),
    unsigned: unsigned && { count: unsigned.count, firstSeenAt: unsigned.first_seen_at, lastSeenAt: unsigned.last_seen_at },
  };
}

/** Attempts not seen for ATTEMPT_RETENTION_MS, removed by the periodic sweep. */
export async function purgeOldAttempts(db: Db, now: number): Promise<number> {
  const result = await db
    .deleteFrom('payment_attempts')
    .where('last_seen_at', '<', now - ATTEMPT_RETENTION_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
