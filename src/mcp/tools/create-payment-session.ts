import { z } from 'zod';
import type { Db } from '../../db/index.ts';
import { createPaymentSession } from '../../sessions/create-session.ts';
import { defineTool } from '../tool.ts';

export const createPaymentSessionTool = defineTool({
  name: 'create_payment_session',
  title: 'Create a payment link',
  description:
    'Creates a real payment session (a payment link) on the account, of the authorization’s mode (test or live), and answers its sessionId and redirectUrl. editable with minAmount lets the buyer choose an amount above a floor; minAmount on a fixed amount is refused. chains are checked against what the account accepts; a chain’s publicAddress pays that one session to that address (the account’s payout wallet is never changed).',
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
    // The session is of the grant's mode, whatever else the deployment serves.
    const inGrantsMode = { ...context, config: { ...context.config, mode: access.grant.mode } };
    const options = { createdVia: 'mcp' as const, mode: access.grant.mode, alsoInTransaction: (trx: Db) => call.recordSuccess(trx) };
    const { sessionId, redirectUrl } = await createPaymentSession(inGrantsMode, access.grant.merchantId, args, options);
    return { sessionId, redirectUrl };
  },
});
