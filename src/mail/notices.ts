import type { Selectable } from 'kysely';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import type { PaymentSessionsTable, PaymentsTable, RefundsTable } from '../db/schema.ts';
import { formatMoney } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import type { MailData, NoticeTopic, PaymentFacts, RefundFacts } from './kinds.ts';
import { queueMail } from './outbox.ts';
import { noticeRecipients } from './preferences.ts';
import { addReceiptAddress, receiptAddresses } from './receipt-addresses.ts';

/**
 * Which mails a change causes, queued in the transaction of that change: the buyer's receipts and
 * the merchant users' notices of payments and refunds, and the account mails. Each mail's cause
 * names the change, so it is queued once whoever records the change (a request, the reconciler).
 */
type PaymentRow = Pick<
  Selectable<PaymentsTable>,
  'id' | 'merchant_id' | 'session_id' | 'public_order_id' | 'amount_minor' | 'currency' | 'value' | 'payer' | 'tx_hash' | 'mode' | 'updated_at'
>;
type SessionRow = Pick<Selectable<PaymentSessionsTable>, 'id' | 'order_id' | 'concept'>;
type RefundRow = Pick<Selectable<RefundsTable>, 'id' | 'amount_minor' | 'currency' | 'value' | 'reason' | 'status' | 'last_error' | 'tx_hash'>;

export type PaymentChange = { type: string; payment: PaymentRow; session: SessionRow; now: number; explorerTxUrl: string };

async function merchantName(trx: Db, merchantId: string): Promise<string> {
  const row = await trx.selectFrom('merchants').select('name').where('id', '=', merchantId).executeTakeFirst();
  return row?.name ?? '';
}

/** `12.50 USD`: the amount as people read it. */
const amountOf = (minor: bigint, currency: string) => formatMoney(minor, currency);

async function paymentFacts(trx: Db, { payment, session, now, explorerTxUrl }: PaymentChange): Promise<PaymentFacts> {
  return {
    merchantId: payment.merchant_id,
    merchantName: await merchantName(trx, payment.merchant_id),
    sessionId: session.id,
    publicOrderId: payment.public_order_id,
    orderId: session.order_id,
    concept: session.concept,
    amount: amountOf(BigInt(payment.amount_minor), payment.currency),
    currency: payment.currency,
    tokenAmount: formatUsdc(BigInt(payment.value)),
    payer: payment.payer,
    txUrl: payment.tx_hash ? explorerTxUrl.replace('{hash}', payment.tx_hash) : null,
    at: now,
  };
}

/** A notice to each of the merchant's users who receive notices of `topic`. */
async function queueNotice(trx: Db, merchantId: string, mode: Mode, topic: Exclude<NoticeTopic, 'summary'>, cause: string, data: MailData, now: number) {
  for (const { userId, email } of await noticeRecipients(trx, merchantId, topic))
    await queueMail(trx, { mode, merchantId, userId, cause, recipient: email, data }, now);
}

/** The mails of a payment's status change: on success the buyer's receipt and the payment notice; on failure or reversal the notice that it needs attention. */
export async function queuePaymentMails(trx: Db, change: PaymentChange): Promise<void> {
  const { payment, now } = change;
  const mode = payment.mode;
  if (change.type === 'payment.succeeded') {
    const facts = await paymentFacts(trx, change);
    for (const email of await receiptAddresses(trx, payment.session_id, payment.id))
      await queueMail(
        trx,
        {
          mode,
          merchantId: payment.merchant_id,
          userId: null,
          cause: `payment:${payment.id}:receipt`,
          recipient: email,
          data: { kind: 'receipt', payment: facts },
        },
        now,
      );
    await queueNotice(trx, payment.merchant_id, mode, 'payments', `payment:${payment.id}:succeeded`, { kind: 'payment_received', payment: facts }, now);
  } else if (change.type === 'payment.failed' || change.type === 'payment.reversed') {
    const detail =
      change.type === 'payment.failed'
        ? 'The payment was claimed but the chain shows it can never settle: the buyer was not charged.'
        : 'The transfer left the chain (a reorganisation): the money did not arrive after all.';
    const data: MailData = { kind: 'payment_attention', payment: await paymentFacts(trx, change), status: 'FAILED', detail };
    await queueNotice(
      trx,
      payment.merchant_id,
      mode,
      'attention',
      `payment:${payment.id}:${change.type === 'payment.failed' ? 'failed' : 'reversed'}`,
      data,
      now,
    );
  }
}

/** A PENDING payment past its bound: one notice per payment. */
export async function queuePendingNotice(trx: Db, change: PaymentChange, boundMinutes: number): Promise<void> {
  const data: MailData = {
    kind: 'payment_attention',
    payment: await paymentFacts(trx, change),
    status: 'PENDING',
    detail: `The payment has been PENDING for more than ${boundMinutes} minutes: Till keeps reading the chain and settles it as soon as the chain decides; the operator sees it in till payments pending.`,
  };
  await queueNotice(trx, change.payment.merchant_id, change.payment.mode, 'attention', `payment:${change.payment.id}:pending-past-bound`, data, change.now);
}

/** The mails of a refund's outcome: the buyer's refund receipt and the merchant's notice when it succeeded, the notice when it failed. */
export async function queueRefundMails(trx: Db, refund: RefundRow, change: PaymentChange): Promise<void> {
  const { payment, now } = change;
  const facts = await paymentFacts(trx, change);
  const refundFacts: RefundFacts = {
    ...facts,
    txUrl: refund.tx_hash ? change.explorerTxUrl.replace('{hash}', refund.tx_hash) : null,
    refundId: refund.id,
    refundAmount: amountOf(BigInt(refund.amount_minor), refund.currency),
    refundTokenAmount: formatUsdc(BigInt(refund.value)),
    reason: refund.reason,
    failure: refund.status === 'FAILED' ? refund.last_error : null,
  };
  const mode = payment.mode;
  if (refund.status === 'SUCCEEDED') {
    for (const email of await receiptAddresses(trx, payment.session_id, payment.id))
      await queueMail(
        trx,
        {
          mode,
          merchantId: payment.merchant_id,
          userId: null,
          cause: `refund:${refund.id}:receipt`,
          recipient: email,
          data: { kind: 'refund_receipt', refund: refundFacts },
        },
        now,
      );
    await queueNotice(trx, payment.merchant_id, mode, 'refunds', `refund:${refund.id}:succeeded`, { kind: 'refund_succeeded', refund: refundFacts }, now);
  } else if (refund.status === 'FAILED')
    await queueNotice(trx, payment.merchant_id, mode, 'refunds', `refund:${refund.id}:failed`, { kind: 'refund_failed', refund: refundFacts }, now);
}

/** A user as account mails address them. */
export type MailUser = { id: string; merchantId: string; email: string };

/** The mode account mails are kept under: live when the deployment serves it (never on the sandbox's mail page), else sandbox. */
export const accountMailMode = (modes: readonly Mode[]): Mode => (modes.includes('live') ? 'live' : 'sandbox');

export async function queueAccountMail(trx: Db, user: MailUser, mode: Mode, cause: string, data: MailData, now: number): Promise<void> {
  await queueMail(trx, { mode, merchantId: user.merchantId, userId: user.id, cause, recipient: user.email, data }, now);
}

/** The payout wallet changed: every user of the merchant is told, whatever their preferences. */
export async function queueWalletChanged(
  trx: Db,
  merchantId: string,
  change: { wallet: string | null; previous: string | null },
  mode: Mode,
  now: number,
): Promise<void> {
  const name = await merchantName(trx, merchantId);
  const users = await trx.selectFrom('users').select(['id', 'email']).where('merchant_id', '=', merchantId).execute();
  for (const user of users)
    await queueMail(
      trx,
      {
        mode,
        merchantId,
        userId: user.id,
        cause: `wallet:${merchantId}:${mode}:${now}:${change.wallet ?? 'none'}`,
        recipient: user.email,
        data: { kind: 'wallet_changed', merchantName: name, wallet: change.wallet, previous: change.previous, at: now },
      },
      now,
    );
}

/** Addresses one payment's receipt may be sent to from the hosted page: enough for a buyer, too few to relay spam. */
export const RECEIPT_ADDRESSES_PER_PAYMENT = 3;

/** Payments with what their mails say of the session: the one read of the receipt request and the periodic looks. */
export const paymentsWithSessions = (db: Db) =>
  db
    .selectFrom('payments as p')
    .innerJoin('payment_sessions as s', 's.id', 'p.session_id')
    .select([
      'p.id',
      'p.merchant_id',
      'p.session_id',
      'p.public_order_id',
      'p.amount_minor',
      'p.currency',
      'p.value',
      'p.payer',
      'p.tx_hash',
      'p.mode',
      'p.updated_at',
      's.order_id',
      's.concept',
    ]);

/**
 * A buyer's request, from the hosted page, for the receipt of a settled payment (named by its
 * unguessable public order id): the address is kept for the payment's refund receipts too, and the
 * receipt queued, in one transaction.
 */
export async function requestReceipt(
  db: Db,
  publicOrderId: string,
  email: string,
  change: { now: number; explorerTxUrl: (mode: Mode) => string },
): Promise<'queued' | 'not_found' | 'too_many'> {
  const row = await paymentsWithSessions(db).where('p.public_order_id', '=', publicOrderId).where('p.status', '=', 'SUCCESS').executeTakeFirst();
  if (!row) return 'not_found';
  return db.transaction().execute(async (trx) => {
    const given = await trx.selectFrom('mail_receipt_addresses').select('email').where('payment_id', '=', row.id).execute();
    const address = email.trim().toLowerCase();
    if (given.some((entry) => entry.email === address)) return 'queued';
    if (given.length >= RECEIPT_ADDRESSES_PER_PAYMENT) return 'too_many';
    await addReceiptAddress(trx, { sessionId: row.session_id, paymentId: row.id }, address, change.now);
    const facts = await paymentFacts(trx, {
      type: 'payment.succeeded',
      payment: row,
      session: { id: row.session_id, order_id: row.order_id, concept: row.concept },
      now: change.now,
      // The transaction's link on the explorer of the order's own mode.
      explorerTxUrl: change.explorerTxUrl(row.mode),
    });
    await queueMail(
      trx,
      {
        mode: row.mode,
        merchantId: row.merchant_id,
        userId: null,
        cause: `payment:${row.id}:receipt`,
        recipient: address,
        data: { kind: 'receipt', payment: facts },
      },
      change.now,
    );
    return 'queued';
  });
}
