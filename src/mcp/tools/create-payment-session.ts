import { z } from 'zod';
import { createPaymentSession } from '../../sessions/create-session.ts';
import { defineTool } from '../tool.ts';

export const createPaymentSessionTool = defineTool({
  name: 'create_payment_session',
  title: 'Create a payment link',
  description:
    'Creates a real payment session (a payment link) on the account and answers its sessionId and redirectUrl. editable with minAmount lets the buyer choose an amount above a floor; minAmount on a fixed amount is refused. chains are checked against what the account accepts; a chain’s publicAddress pays that one session to that address (the account’s payout wallet is never changed).',
  scope: 'sessions:write',
  input: z.strictObject({
    amount: z.number().positive().describe("The amount in the currency, e.g. 12.5: at most the currency's decimals and 15 significant digits"),
    currency: z.string().min(3).max(3).describe('ISO 4217 code, e.g. USD or EUR'),
    orderType: z.enum(['STATIC', 'TRANSIENT']).optional().describe('TRANSIENT (paid once, the default) or STATIC (paid many times)'),
    editable: z.boolean().optional().describe('Whether the buyer chooses the amount'),
    minAmount: z.number().positive().optional().describe('The lowest amount the buyer may choose; editable sessions only'),
    chains: z
      .array(
        z.strictObject({
          name: z.string().describe('A chain the account accepts, e.g. base'),
          tokens: z.array(z.string()).min(1).describe('Tokens accepted on it, e.g. ["USDC"]'),
          publicAddress: z.string().optional().describe('Where this one payment goes (0x address); the account’s wallet otherwise'),
        }),
      )
      .min(1)
      .optional(),
  }),
  output: z.object({ sessionId: z.string(), redirectUrl: z.string() }),
  async run(context, access, args, call) {
    // The call is audited in the session's transaction: no session made by an agent without its audit row.
    const { sessionId, redirectUrl } = await createPaymentSession(context, access.grant.merchantId, args, {
      createdVia: 'mcp',
      alsoInTransaction: (trx) => call.recordSuccess(trx),
    });
    return { sessionId, redirectUrl };
  },
});
