import type { Mode } from '../common/modes.ts';

/** What a payment or refund mail tells, frozen when it is queued. Amounts are decimal strings as shown. */
export type PaymentFacts = {
  merchantId: string;
  merchantName: string;
  sessionId: string;
  publicOrderId: string | null;
  orderId: string | null;
  concept: string | null;
  amount: string;
  currency: string;
  /** USDC paid, as a decimal string. */
  tokenAmount: string;
  payer: string;
  /** The transaction on the block explorer. */
  txUrl: string | null;
  at: number;
};

export type RefundFacts = PaymentFacts & { refundId: string; refundAmount: string; refundTokenAmount: string; reason: string | null; failure: string | null };

/** Every mail Till sends, with what it says. */
export type MailData =
  | { kind: 'receipt'; payment: PaymentFacts }
  | { kind: 'refund_receipt'; refund: RefundFacts }
  | { kind: 'payment_received'; payment: PaymentFacts }
  | { kind: 'refund_succeeded'; refund: RefundFacts }
  | { kind: 'refund_failed'; refund: RefundFacts }
  | { kind: 'payment_attention'; payment: PaymentFacts; status: 'PENDING' | 'FAILED'; detail: string }
  | { kind: 'webhook_failing'; merchantName: string; url: string; failingSince: number; failed: number }
  | {
      kind: 'summary';
      merchantName: string;
      period: 'daily' | 'weekly';
      from: number;
      to: number;
      payments: number;
      totals: { currency: string; amount: string }[];
      refunds: number;
    }
  | { kind: 'password_reset'; email: string; link: string; expiresAt: number }
  | { kind: 'password_changed'; email: string; at: number }
  | { kind: 'sign_up'; businessName: string; link: string; expiresAt: number }
  | { kind: 'sign_up_existing'; email: string }
  | { kind: 'invitation'; merchantName: string; invitedBy: string | null; role: string; link: string; expiresAt: number }
  | { kind: 'wallet_changed'; merchantName: string; wallet: string | null; previous: string | null; at: number };

export type MailKind = MailData['kind'];

/** The notices a merchant's user chooses to receive or not, each unsubscribable on its own. */
export type NoticeTopic = 'payments' | 'refunds' | 'attention' | 'webhooks' | 'summary';

/** Which preference a kind of mail answers to; buyers' receipts and account mails answer to none. */
export const TOPIC_OF: Partial<Record<MailKind, NoticeTopic>> = {
  payment_received: 'payments',
  refund_succeeded: 'refunds',
  refund_failed: 'refunds',
  payment_attention: 'attention',
  webhook_failing: 'webhooks',
  summary: 'summary',
};

/** A mail as the outbox holds it. */
export type OutboxMail = {
  id: string;
  mode: Mode;
  merchantId: string | null;
  userId: string | null;
  recipient: string;
  data: MailData;
  status: 'PENDING' | 'SENT' | 'FAILED' | 'KEPT';
  attempts: number;
  lastError: string | null;
  createdAt: number;
  sentAt: number | null;
};

/** A mail ready for SMTP: both parts, and the headers of a notice (List-Unsubscribe). */
export type MailContent = { subject: string; text: string; html: string; headers: Record<string, string> };
