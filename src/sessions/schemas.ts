import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { SessionStatus } from '../db/schema.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { MAX_ADDRESS, mailAddressProblem } from '../mail/address.ts';
import { MAX_SESSIONS_PAGE_SIZE } from './sessions.ts';

/** The zod schemas of the payment-session resource (E1, E2, GET): validation, types and OpenAPI in one. Null means "not given". */
export const MAX_ORDER_ID = 255;
export const MAX_URL = 2048;
export const MAX_CONCEPT = 500;

const absoluteHttpUrl = z
  .string()
  .max(MAX_URL, `must be at most ${MAX_URL} characters`)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL');

const sessionFields = {
  amount: z.number().meta({
    description:
      "Amount of the purchase, in the currency: above 0, at most 10^12, the currency's decimals and 15 significant digits. On an editable session, the prefilled amount.",
    example: 25.5,
  }),
  currency: z.string().meta({ description: 'ISO 4217 code, case-insensitive', example: 'USD' }),
  minAmount: z.number().nullable().meta({ description: 'Floor of a buyer-chosen amount, with the rules of amount; only with editable: true' }),
  editable: z.boolean().nullable().meta({ description: 'Whether the buyer chooses the amount' }),
  orderId: z
    .string()
    .min(1, 'must not be empty')
    .max(MAX_ORDER_ID, `must be at most ${MAX_ORDER_ID} characters`)
    .nullable()
    .meta({ description: "Merchant's unique reference of the order" }),
  concept: z
    .string()
    .max(MAX_CONCEPT, `must be at most ${MAX_CONCEPT} characters`)
    .nullable()
    .meta({ description: 'What is being paid for, shown to the buyer' }),
  successUrl: absoluteHttpUrl.nullable(),
  cancelUrl: absoluteHttpUrl.nullable(),
  failUrl: absoluteHttpUrl.nullable(),
  buyerEmail: z
    .string()
    .max(MAX_ADDRESS, `must be at most ${MAX_ADDRESS} characters`)
    .refine((value) => mailAddressProblem(value.trim()) === undefined, 'is not an email address (write it as name@example.com)')
    .nullable()
    .meta({
      description:
        "The buyer's email address: the receipt of the payment, and of its refunds, is mailed there once it settles. Only on a TRANSIENT session; never shown back.",
      example: 'buyer@example.org',
    }),
};

export const CreateSessionBody = z
  .strictObject({
    amount: sessionFields.amount,
    currency: sessionFields.currency,
    orderType: z
      .enum(['STATIC', 'TRANSIENT'])
      .nullable()
      .optional()
      .meta({ description: 'TRANSIENT (default) is paid once and expires; STATIC never expires and takes many payments' }),
    minAmount: sessionFields.minAmount.optional(),
    editable: sessionFields.editable.optional(),
    orderId: sessionFields.orderId.optional(),
    concept: sessionFields.concept.optional(),
    successUrl: sessionFields.successUrl.optional(),
    cancelUrl: sessionFields.cancelUrl.optional(),
    failUrl: sessionFields.failUrl.optional(),
    buyerEmail: sessionFields.buyerEmail.optional(),
  })
  .meta({ id: 'NewPaymentSession' });

export const SessionCreated = z
  .object({
    sessionId: z.string().meta({ description: 'Public session id; an x402 buyer pays this id', example: 'ps_3q2Hf0…' }),
    redirectUrl: z.string().meta({ description: 'Hosted payment page; carries the session id as query parameter uid' }),
    warnings: z
      .array(z.object({ code: z.enum(['no_payout_wallet']), message: z.string() }))
      .optional()
      .meta({
        description:
          'Present only when the session cannot be paid yet: `no_payout_wallet` — the merchant has no payout wallet (set it in the dashboard under Settings → Payout wallet; operators: `till merchant set-wallet`)',
      }),
  })
  .meta({ id: 'PaymentSessionResponse' });

/** E2 takes the fields of E1 but `orderType`, each optional, and names the session it changes. */
export const UpdateSessionBody = z
  .strictObject({
    sessionId: z.string().min(1, 'must not be empty').meta({ description: 'The session to update' }),
    ...CreateSessionBody.omit({ orderType: true }).partial().shape,
  })
  .meta({ id: 'UpdatePaymentSession' });

/** What the OpenAPI document shows E1 and E2 sending and answering. */
export const SESSION_EXAMPLES = {
  create: { amount: 12.5, currency: 'USD', orderId: 'order-1001', concept: 'Two coffees', successUrl: 'https://shop.example/thanks' },
  update: { sessionId: 'ps_3q2Hf0aZ', amount: 15, concept: 'Three coffees' },
  answer: { sessionId: 'ps_3q2Hf0aZ', redirectUrl: 'https://till.example/checkout/pay?uid=ps_3q2Hf0aZ' },
};

/** Bodies of E1 and E2 are small; anything larger is refused before it is parsed. */
export const BODY_LIMIT = 16 * 1024;

/** The refusals E1 and E2 share, for their route docs. */
export const SESSION_WRITE_REFUSALS = {
  400: { description: 'A field is invalid, or tries to set the payout wallet (`payout_wallet_not_settable`); `error.field` names it', schema: ErrorResponse },
  401: UNAUTHORIZED_RESPONSE,
  413: { description: 'Body over 16 KiB', schema: ErrorResponse },
  415: { description: 'Content-Type is not application/json', schema: ErrorResponse },
};

export const SessionParams = z.strictObject({ sessionId: z.string().min(1).max(64) });

export const SessionRefund = z
  .object({
    id: z.string().meta({ description: 'The refund id (rf_…)' }),
    amount: z.number().meta({ description: "In the payment's currency (its share of the payment, rounded down)" }),
    currency: z.string(),
    tokenAmount: z.string().meta({ description: 'USDC given back, as a decimal string' }),
    status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']),
    txHash: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'SessionRefund' });

export const SessionPayment = z
  .object({
    paymentId: z.string().nullable().meta({ description: 'The order id (TX-…) once settled; null while pending or failed' }),
    status: z.enum(['PENDING', 'SUCCESS', 'FAILED', 'REVERSED']),
    amount: z.number(),
    currency: z.string(),
    tokenAmount: z.string().meta({ description: 'USDC, as a decimal string' }),
    rate: z.string(),
    payer: z.string(),
    payTo: z.string(),
    transactionHash: z.string().nullable(),
    receiptUrl: z.string().nullable().meta({ description: 'The public receipt (E4) of a settled order' }),
    failureReason: z.string().nullable(),
    createdAt: z.string(),
    settledAt: z.string().nullable(),
    refunds: z.array(SessionRefund).meta({ description: "Refunds of this payment from the merchant's payout wallet to the payer, oldest first" }),
    refundedAmount: z.number().meta({ description: "What refunds that SUCCEEDED gave back, in the payment's currency" }),
    refundedTokenAmount: z.string().meta({ description: 'The same in USDC, as a decimal string' }),
  })
  .meta({ id: 'SessionPayment' });

/** A session's status as the API shows it (EXPIRED as soon as the deadline passes, before the sweep marks it). */
export const SESSION_STATUSES = ['OPEN', 'SUCCESS', 'EXPIRED'] as const satisfies readonly SessionStatus[];

export const SessionDetails = z
  .object({
    sessionId: z.string(),
    redirectUrl: z.string(),
    status: z.enum(SESSION_STATUSES),
    orderType: z.enum(['STATIC', 'TRANSIENT']),
    amount: z.number(),
    currency: z.string(),
    minAmount: z.number().nullable(),
    editable: z.boolean(),
    orderId: z.string().nullable(),
    concept: z.string().nullable(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    failUrl: z.string().nullable(),
    expiresAt: z.string().nullable().meta({ description: 'ISO 8601; null for STATIC sessions, which never expire' }),
    createdAt: z.string(),
    updatedAt: z.string(),
    payments: z
      .array(SessionPayment)
      .meta({ description: 'Every payment attempt that was claimed for this session, oldest first; each successful one is an order' }),
  })
  .meta({ id: 'PaymentSessionDetails' });

const isStatusList = (value: string) => value.split(',').every((status) => (SESSION_STATUSES as readonly string[]).includes(status));

/** The query of the session list; each parameter is given at most once. */
export const SessionListQuery = z.strictObject({
  status: z
    .string()
    .refine(isStatusList, `must be one or more of ${SESSION_STATUSES.join(', ')}, comma-separated`)
    .optional()
    .meta({ description: 'Only sessions with one of these statuses, comma-separated (`OPEN,EXPIRED`)', example: 'SUCCESS' }),
  orderId: z.string().min(1, 'must not be empty').max(MAX_ORDER_ID, `must be at most ${MAX_ORDER_ID} characters`).optional().meta({
    description: 'Only the session with this orderId (exact match)',
  }),
  createdFrom: z.iso.datetime().optional().meta({ description: 'Only sessions created at or after this time (ISO 8601, UTC: `2026-01-31T00:00:00Z`)' }),
  createdTo: z.iso.datetime().optional().meta({ description: 'Only sessions created before this time (ISO 8601, UTC)' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_SESSIONS_PAGE_SIZE)
    .default(20)
    .meta({ description: `Sessions a page, 1 to ${MAX_SESSIONS_PAGE_SIZE}` }),
  cursor: z.string().min(1).max(200).optional().meta({ description: 'Where the page starts: the `nextCursor` of the page before' }),
});

export const SessionList = z
  .object({
    sessions: z.array(SessionDetails).meta({ description: 'Newest first; each exactly as the read of one session answers it' }),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
  })
  .meta({ id: 'PaymentSessionList' });

/** Keys (lower case, without `_` and `-`) that would name a payout wallet; E1 and E2 refuse each by name. */
const PAYOUT_WALLET_KEYS = new Set(['wallet', 'walletaddress', 'payoutaddress', 'payoutwallet', 'payto', 'publicaddress', 'merchantwallet', 'payout']);

/**
 * The payout wallet is never set over the payment API. Unknown fields are refused anyway (the
 * bodies are strict), but a field that tries to set the wallet gets its own refusal, so the caller
 * learns why rather than only that the field is unknown.
 */
export function refusePayoutWalletFields(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  for (const key of Object.keys(body)) {
    if (PAYOUT_WALLET_KEYS.has(key.toLowerCase().replace(/[_-]/g, ''))) throw new TillError('payout_wallet_not_settable', { field: key });
  }
}
