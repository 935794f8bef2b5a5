import type { Selectable } from 'kysely';
import { getAddress } from 'viem';
import type { AppContext } from '../context.ts';
import type { PaymentsTable, RefundsTable } from '../db/schema.ts';
import { decimalNumber } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import type { SessionRow } from './sessions.ts';
import { sessionView } from './views.ts';

type PaymentRow = Selectable<PaymentsTable>;
type RefundRow = Selectable<RefundsTable>;

/**
 * Sessions as the merchant reads them over the API (the read of one, and each item of the list):
 * the session view with every payment claimed for it, oldest first. The payments of all the
 * sessions are read in one query. `now` decides which are shown expired.
 */
export async function sessionDetails(context: AppContext, sessions: readonly SessionRow[], now = context.now()) {
  const ids = sessions.map((session) => session.id);
  const payments =
    ids.length === 0
      ? []
      : await context.db.selectFrom('payments').selectAll().where('session_id', 'in', ids).orderBy('session_id').orderBy('created_at').orderBy('id').execute();
  const bySession = Map.groupBy(payments, (payment) => payment.session_id);
  const paymentIds = payments.map((payment) => payment.id);
  const refunds =
    paymentIds.length === 0
      ? []
      : await context.db
          .selectFrom('refunds')
          .selectAll()
          .where('payment_id', 'in', paymentIds)
          .orderBy('payment_id')
          .orderBy('created_at')
          .orderBy('id')
          .execute();
  const byPayment = Map.groupBy(refunds, (refund) => refund.payment_id);
  return sessions.map((session) => ({
    ...sessionView(context.config.baseUrl, session, now),
    payments: (bySession.get(session.id) ?? []).map((payment) => paymentView(context.config.baseUrl, payment, byPayment.get(payment.id) ?? [])),
  }));
}

function refundView(r: RefundRow) {
  return {
    id: r.id,
    amount: decimalNumber(r.amount_minor, r.currency),
    currency: r.currency,
    tokenAmount: formatUsdc(r.value),
    status: r.status,
    txHash: r.tx_hash,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

function paymentView(baseUrl: string, p: PaymentRow, refunds: readonly RefundRow[]) {
  const succeeded = refunds.filter((r) => r.status === 'SUCCEEDED');
  return {
    paymentId: p.public_order_id,
    status: p.status,
    amount: decimalNumber(p.amount_minor, p.currency),
    currency: p.currency,
    tokenAmount: formatUsdc(p.value),
    rate: p.rate,
    payer: getAddress(p.payer),
    payTo: getAddress(p.pay_to),
    transactionHash: p.tx_hash,
    receiptUrl: p.public_order_id ? `${baseUrl}/checkout/v2/orders/receipt/${p.public_order_id}` : null,
    failureReason: p.failure_reason,
    createdAt: new Date(p.created_at).toISOString(),
    settledAt: p.settled_at === null ? null : new Date(p.settled_at).toISOString(),
    refunds: refunds.map(refundView),
    refundedAmount: decimalNumber(
      succeeded.reduce((sum, r) => sum + r.amount_minor, 0n),
      p.currency,
    ),
    refundedTokenAmount: formatUsdc(succeeded.reduce((sum, r) => sum + r.value, 0n)),
  };
}
