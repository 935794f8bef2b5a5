import { z } from 'zod';
import {
  AmountField,
  CreateRefundBody,
  listRefunds,
  PaymentIdField,
  PreparedRefund,
  preparedView,
  Refund,
  RefundList,
  RefundListQuery,
  refundView,
} from '../../chain/refund-schemas.ts';
import { makeRefund, prepareRefund, RefundLimitRefusal, refundablePayment, refundableValue, refundValue } from '../../chain/refunds.ts';
import type { AppContext } from '../../context.ts';
import { recordActivity } from '../../merchants/events.ts';
import { formatUsdc } from '../../money/usdc.ts';
import type { McpAccess } from '../../oauth/mcp-access.ts';
import { findRefund, grantRefundedSince, type LimitBreach, limitBreach, REFUND_LIMIT_WINDOW_MS } from '../../payments/refunds.ts';
import { defineTool, ToolRefusal } from '../tool.ts';

const WHERE_SET = 'The merchant sets them under Developers in the dashboard; no tool can change them.';

/** The refusal of a refund over its grant's limits, naming the limit (a limit of 0 refuses every refund). */
function limitRefusal(tool: string, breach: LimitBreach, value: bigint): ToolRefusal {
  const { perRefund, perDay } = breach.limits;
  if (breach.limit === 'unset')
    return new ToolRefusal(
      'refund_limit_unset',
      `${tool} refused: the merchant has set no refund limits for this authorization, so it may not refund. ${WHERE_SET} (A limit of 0 refuses every refund.)`,
    );
  if (breach.limit === 'per_refund')
    return new ToolRefusal(
      'refund_limit_per_refund',
      `${tool} refused: ${formatUsdc(value)} USDC is over this authorization's refund limit per refund, ${formatUsdc(perRefund!)} USDC${perRefund === 0n ? ' (a limit of 0 refuses every refund)' : ''}. Nothing was recorded or moved. ${WHERE_SET}`,
    );
  return new ToolRefusal(
    'refund_limit_per_day',
    `${tool} refused: ${formatUsdc(value)} USDC would bring this authorization's refunds of the last 24 hours to ${formatUsdc(breach.spent + value)} USDC, over its refund limit per 24 hours, ${formatUsdc(perDay!)} USDC (${formatUsdc(breach.spent)} USDC used). Nothing was recorded or moved. ${WHERE_SET}`,
  );
}

const scopeOf = (access: McpAccess) => ({ merchantId: access.grant.merchantId, mode: access.grant.mode });

/** The grant's limits checked before anything is prepared (they are checked again, atomically, when the refund is recorded). */
async function checkLimits(context: AppContext, access: McpAccess, tool: string, value: bigint): Promise<void> {
  const breach = limitBreach(access.grant.refundLimits, await grantRefundedSince(context.db, access.grant.id, context.now() - REFUND_LIMIT_WINDOW_MS), value);
  if (breach) throw limitRefusal(tool, breach, value);
}

export const prepareRefundTool = defineTool({
  name: 'prepare_refund',
  title: 'Prepare a refund',
  description:
    "Answers the EIP-712 typed data of the EIP-3009 authorization that gives `amount` USDC of a settled payment (paymentId TX-…) back to its payer from the payout wallet that received it, valid 10 minutes. The payout wallet's owner signs it (eth_signTypedData_v4, or viem's signTypedData); submit_refund then makes the refund. Refused over the limits the merchant set for this authorization (per refund, per 24 hours), and when none are set.",
  scope: 'refunds:write',
  input: z.strictObject({ paymentId: PaymentIdField, amount: AmountField }),
  // The API's shapes without their OpenAPI ids: a tool's schemas are plain objects at the top.
  output: z.object(PreparedRefund.shape),
  async run(context, access, { paymentId, amount }) {
    const payment = await refundablePayment(context, scopeOf(access), paymentId);
    await checkLimits(context, access, 'prepare_refund', refundValue(amount, await refundableValue(context, payment)));
    const { typedData } = await prepareRefund(context, scopeOf(access), paymentId, amount);
    return preparedView(paymentId, amount.trim(), typedData, context.now());
  },
});

export const submitRefundTool = defineTool({
  name: 'submit_refund',
  title: 'Submit a signed refund',
  description:
    "Makes a refund from what prepare_refund answered (its `submit` fields) and the payout wallet's signature: checked as the dashboard checks it, submitted, and decided by the chain alone (PENDING until the transfer is seen). Refused, with nothing recorded or moved, over the limits the merchant set for this authorization (per refund, per 24 hours), or when none are set.",
  scope: 'refunds:write',
  input: z.strictObject(CreateRefundBody.shape),
  output: z.object(Refund.shape),
  async run(context, access, args, call) {
    const services = call.rails[access.grant.mode];
    try {
      const made = await makeRefund(
        context,
        services,
        scopeOf(access),
        args.paymentId,
        { ...args, reason: args.reason },
        { origin: 'mcp', grantId: access.grant.id },
        // The agent's refund is a line of the merchant's activity log, as a person's is.
        (trx, refund) =>
          recordActivity(
            trx,
            refund.merchant_id,
            { kind: 'agent', id: access.grant.id, label: access.grant.clientName, ip: null, userAgent: null },
            {
              type: 'refund_sent',
              mode: refund.mode,
              detail: { order: args.paymentId, refund: refund.id, usdc: formatUsdc(refund.value), reason: refund.reason },
            },
            context.now(),
          ),
      );
      const refund = await findRefund(context.db, scopeOf(access), made.id);
      return refundView(refund!);
    } catch (error) {
      if (error instanceof RefundLimitRefusal) throw limitRefusal('submit_refund', error.breach, error.value);
      throw error;
    }
  },
});

export const listRefundsTool = defineTool({
  name: 'list_refunds',
  title: 'Refunds',
  description:
    "Refunds of the authorization's mode, newest first, filtered by paymentId (TX-…), paymentSessionId and status (PENDING, SUCCEEDED, FAILED, comma-separated), a page at a time: pass nextCursor as cursor.",
  scope: 'refunds:read',
  input: RefundListQuery,
  output: z.object(RefundList.shape),
  run: (context, access, query) => listRefunds(context.db, scopeOf(access), query),
});
