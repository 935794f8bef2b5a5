import type { PaymentStatus } from '../../db/schema.ts';
import { type Html, html } from './html.ts';

/** A payment's status in the words every page uses (Orders, a link's payments, the receipt). */
export const PAYMENT_STATUS_WORDS: Record<PaymentStatus, string> = {
  SUCCESS: 'Paid',
  REVERSED: 'Reversed',
  FAILED: 'Failed',
  PENDING: 'Confirming…',
};

const TAG_CLASSES: Record<PaymentStatus, string> = {
  SUCCESS: 'tag tag-granted',
  REVERSED: 'tag tag-opt-in',
  FAILED: 'tag tag-opt-in',
  PENDING: 'tag',
};

/** The status as a tag, as the dashboard's lists show it. */
export const paymentStatusTag = (status: PaymentStatus): Html => html`<span class="${TAG_CLASSES[status]}">${PAYMENT_STATUS_WORDS[status]}</span>`;
