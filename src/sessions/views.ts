import { noWalletWarning } from '../merchants/merchants.ts';
import { decimalNumber } from '../money/iso4217.ts';
import { isExpired, type SessionRow } from './sessions.ts';

/** The absolute URL a session is paid at over x402: the challenge's `resource`, built from TILL_BASE_URL, never from the Host header. */
export function sessionResourceUrl(baseUrl: string, sessionId: string): string {
  return `${baseUrl}/x402/session/${encodeURIComponent(sessionId)}`;
}

/** What the API shows of a session: the 2.2 body of E1 and E2, and the GET view. */
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
