import { decimalNumber } from '../money/iso4217.ts';
import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { PaymentSessionsTable } from '../db/schema.ts';
import { currencyExponent } from '../money/iso4217.ts';
import { minorToJsonNumber } from '../money/decimal.ts';
import { noWalletWarning } from '../merchants/merchants.ts';

export type SessionRow = Selectable<PaymentSessionsTable>;

export function redirectUrlFor(baseUrl: string, sessionId: string): string {
  return `${baseUrl}/checkout/pay?uid=${encodeURIComponent(sessionId)}`;
}

export type SessionWarning = { code: 'no_payout_wallet'; message: string };

/**
 * The 2.2 body of E1 and E2. `warnings` appears only when the session, valid as it is, cannot be
 * paid yet (no payout wallet), so a merchant learns it when creating the session, not from a buyer.
 */
export function sessionCreatedBody(baseUrl: string, sessionId: string, warnings: SessionWarning[] = []) {
  return { sessionId, redirectUrl: redirectUrlFor(baseUrl, sessionId), ...(warnings.length ? { warnings } : {}) };
}

export function payabilityWarnings(merchantId: string, payTo: { walletConfigured: boolean; sessionPayTo?: string | null }): SessionWarning[] {
  return payTo.walletConfigured || payTo.sessionPayTo ? [] : [{ code: 'no_payout_wallet', message: noWalletWarning(merchantId) }];
}

/** A TRANSIENT session past its deadline is expired even before the sweeper marks it. */
export function isExpired(session: Pick<SessionRow, 'status' | 'expires_at'>, now: number): boolean {
  return session.status === 'EXPIRED' || (session.status === 'OPEN' && session.expires_at !== null && session.expires_at <= now);
}

export async function findSession(db: Db, sessionId: string): Promise<SessionRow | undefined> {
  return db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirst();
}

export async function findMerchantSession(db: Db, merchantId: string, sessionId: string): Promise<SessionRow | undefined> {
  return db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).where('merchant_id', '=', merchantId).executeTakeFirst();
}


/** The session as the merchant sees it through GET. */
export function sessionView(baseUrl: string, row: SessionRow, now: number) {
  return {
    sessionId: row.id,
    redirectUrl: redirectUrlFor(baseUrl, row.id),
    status: isExpired(row, now) ? 'EXPIRED' : row.status,
    orderType: row.order_type,
    amount: decimalNumber(row.amount_minor, row.currency),
    currency: row.currency,
    minAmount: row.min_amount_minor === null ? null : decimalNumber(row.min_amount_minor, row.currency),
    editable: row.editable === 1,
    orderId: row.order_id,
    concept: row.concept,
    successUrl: row.success_url,
    cancelUrl: row.cancel_url,
    failUrl: row.fail_url,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
