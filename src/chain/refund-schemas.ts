import { getAddress } from 'viem';
import { z } from 'zod';
import type { Db } from '../db/index.ts';
import type { RefundStatus } from '../db/schema.ts';
import { decodeCursor, encodeCursor } from '../http/cursor.ts';
import { decimalNumber } from '../money/iso4217.ts';
import { formatUsdc } from '../money/usdc.ts';
import { pageOfRefunds, type RefundReadScope, type RefundWithOrder } from '../payments/refunds.ts';
import { MAX_REFUND_REASON, REFUND_VALIDITY_S, type refundTypedData, typedDataJson } from './refunds.ts';

/** The refunds of the payment API and the MCP tools: the shapes they take and answer, one place for both. */

const ORDER_ID = /^TX-[0-9A-F]{32}$/i;
const REFUND_ID = /^rf_[A-Za-z0-9_-]{22}$/;

export const PaymentIdField = z
  .string()
  .regex(ORDER_ID, 'must be an order id: TX- and 32 hexadecimal digits')
  .transform((id) => id.toUpperCase())
  .meta({ description: 'The order id of the settled payment (`paymentId` of the session read: `TX-…`)', example: 'TX-6B1F0C2A9D3E4F5A6B7C8D9E0F1A2B3C' });

export const RefundIdField = z.string().regex(REFUND_ID, 'must be a refund id: rf_ and 22 characters').meta({ description: 'The refund id (`rf_…`)' });

export const AmountField = z
  .string()
  .min(1, 'is required')
  .max(32)
  .meta({ description: 'USDC to give back, as a decimal string with at most 6 decimals; at most what is left to refund of the payment', example: '0.40' });

export const PrepareRefundParams = z.strictObject({ paymentId: PaymentIdField });
export const PrepareRefundBody = z.strictObject({ amount: AmountField });

const TypedData = z
  .object({
    domain: z.object({ name: z.string(), version: z.string(), chainId: z.number(), verifyingContract: z.string() }),
    types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() })).readonly()),
    primaryType: z.literal('TransferWithAuthorization'),
    message: z.object({
      from: z.string().meta({ description: 'The payout wallet that received the payment: it signs' }),
      to: z.string().meta({ description: 'The payer, who gets the refund' }),
      value: z.string().meta({ description: 'USDC base units, as a decimal string' }),
      validAfter: z.string(),
      validBefore: z.string().meta({ description: 'Unix seconds' }),
      nonce: z.string(),
    }),
  })
  .meta({
    id: 'RefundTypedData',
    description:
      'EIP-712 typed data of the EIP-3009 TransferWithAuthorization to sign with the payout wallet (`eth_signTypedData_v4` takes it as it is; viem’s `signTypedData` without `EIP712Domain` and with the numbers as bigint)',
  });

export const PreparedRefund = z
  .object({
    paymentId: z.string(),
    amount: z.string().meta({ description: 'USDC, as asked' }),
    typedData: TypedData,
    validFrom: z.string().meta({ description: 'ISO 8601, when it was prepared: the authorization is valid at once (the typed data’s validAfter is 0)' }),
    validBefore: z
      .string()
      .meta({ description: `ISO 8601: it must be submitted before this, ${Number(REFUND_VALIDITY_S) / 60} minutes after it was prepared` }),
    submit: z
      .object({ paymentId: z.string(), amount: z.string(), validBefore: z.string(), nonce: z.string() })
      .meta({ description: 'The fields to post to POST /api/checkout/v2/refunds, with the `signature`' }),
  })
  .meta({ id: 'PreparedRefund' });

export const CreateRefundBody = z
  .strictObject({
    paymentId: PaymentIdField,
    amount: AmountField,
    validBefore: z.string().max(32).meta({ description: 'The typed data’s `validBefore`, Unix seconds as prepared' }),
    nonce: z.string().max(80).meta({ description: 'The typed data’s `nonce`, as prepared' }),
    signature: z.string().max(300).meta({ description: 'The payout wallet’s EIP-712 signature of the typed data, 0x and hex' }),
    reason: z
      .string()
      .max(MAX_REFUND_REASON)
      .optional()
      .meta({ description: `Why, in the merchant’s words (at most ${MAX_REFUND_REASON} characters): in the webhook event and the buyer’s mail` }),
  })
  .meta({ id: 'CreateRefund' });

export const REFUND_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export const REFUND_ORIGINS = ['dashboard', 'api', 'mcp'] as const;

export const Refund = z
  .object({
    id: z.string(),
    paymentId: z.string().nullable().meta({ description: 'The order id (TX-…) of the payment it refunds' }),
    paymentSessionId: z.string(),
    status: z.enum(REFUND_STATUSES).meta({
      description:
        'Decided by the chain alone: PENDING until the transfer is seen (SUCCEEDED) or the authorization can no longer move money (FAILED: expired unused or cancelled)',
    }),
    amount: z.number().meta({ description: "In the payment's currency (its share of the payment, rounded down)" }),
    currency: z.string(),
    tokenAmount: z.string().meta({ description: 'USDC given back, as a decimal string' }),
    reason: z.string().nullable(),
    from: z.string().meta({ description: 'The payout wallet it is paid from' }),
    to: z.string().meta({ description: 'The payer it is paid to' }),
    transactionHash: z.string().nullable(),
    lastError: z.string().nullable().meta({ description: 'Why it FAILED, or while PENDING what stands in the way (a facilitator’s refusal); null otherwise' }),
    origin: z.enum(REFUND_ORIGINS).meta({ description: 'How it was made: the dashboard, the payment API, or a coding agent through MCP' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Refund' });

const isStatusList = (value: string) => value.split(',').every((status) => (REFUND_STATUSES as readonly string[]).includes(status));
export const MAX_REFUNDS_PAGE_SIZE = 100;

export const RefundListQuery = z.strictObject({
  paymentId: PaymentIdField.optional().meta({ description: 'Only the refunds of this payment (its order id, TX-…)' }),
  paymentSessionId: z.string().min(1).max(64).optional().meta({ description: 'Only the refunds of this session’s payments' }),
  status: z
    .string()
    .refine(isStatusList, `must be one or more of ${REFUND_STATUSES.join(', ')}, comma-separated`)
    .optional()
    .meta({ description: 'Only refunds with one of these statuses, comma-separated' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_REFUNDS_PAGE_SIZE)
    .default(20)
    .meta({ description: `Refunds a page, 1 to ${MAX_REFUNDS_PAGE_SIZE}` }),
  cursor: z.string().min(1).max(200).optional().meta({ description: 'Where the page starts: the `nextCursor` of the page before' }),
});

export const RefundList = z
  .object({ refunds: z.array(Refund), nextCursor: z.string().nullable().meta({ description: 'The next page’s cursor; null on the last page' }) })
  .meta({ id: 'RefundList' });

export function refundView(row: RefundWithOrder): z.output<typeof Refund> {
  return {
    id: row.id,
    paymentId: row.public_order_id,
    paymentSessionId: row.session_id,
    status: row.status,
    amount: decimalNumber(row.amount_minor, row.currency),
    currency: row.currency,
    tokenAmount: formatUsdc(row.value),
    reason: row.reason,
    from: getAddress(row.from_address),
    to: getAddress(row.to_address),
    transactionHash: row.tx_hash,
    lastError: row.status === 'SUCCEEDED' ? null : row.last_error,
    origin: row.origin,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** A prepared refund as the API and the tools answer it. */
export function preparedView(paymentId: string, amount: string, typed: ReturnType<typeof refundTypedData>, now: number): z.output<typeof PreparedRefund> {
  const json = typedDataJson(typed);
  return {
    paymentId,
    amount,
    typedData: json,
    validFrom: new Date(now).toISOString(),
    validBefore: new Date(Number(typed.message.validBefore) * 1000).toISOString(),
    submit: { paymentId, amount, validBefore: json.message.validBefore, nonce: json.message.nonce },
  };
}

/** One page of the merchant's refunds as the list endpoint and list_refunds answer it; a bad cursor is a 400 naming it. */
export async function listRefunds(db: Db, scope: RefundReadScope, query: z.output<typeof RefundListQuery>): Promise<z.output<typeof RefundList>> {
  const page = await pageOfRefunds(
    db,
    scope,
    {
      ...(query.paymentId ? { publicOrderId: query.paymentId } : {}),
      ...(query.paymentSessionId ? { sessionId: query.paymentSessionId } : {}),
      ...(query.status ? { status: query.status.split(',') as RefundStatus[] } : {}),
    },
    { ...(query.cursor ? { after: decodeCursor(query.cursor) } : {}), size: query.limit },
  );
  return { refunds: page.refunds.map(refundView), nextCursor: page.next ? encodeCursor(page.next) : null };
}
