import { z } from 'zod';
import { listSessions } from '../../sessions/list-sessions.ts';
import { SessionList, SessionListQuery } from '../../sessions/schemas.ts';
import { defineTool } from '../tool.ts';

export const listPaymentSessionsTool = defineTool({
  name: 'list_payment_sessions',
  title: 'Payment sessions',
  description:
    "Payment sessions of the authorization's mode (test or live), newest first, with their payments and refunds, filtered as GET /api/checkout/v2/payment_session is: status (OPEN, SUCCESS, EXPIRED, comma-separated), orderId (exact), createdFrom and createdTo (ISO 8601), limit, and cursor (the nextCursor of the page before). Finds an order by its orderId in one call.",
  scope: 'orders:read',
  input: SessionListQuery,
  // The API's shape without its OpenAPI id: a tool's schemas are plain objects at the top.
  output: z.object(SessionList.shape),
  run: (context, access, args) => listSessions(context, { merchantId: access.grant.merchantId, mode: access.grant.mode }, args),
});
