import { z } from 'zod';
import { listPaidOrders, MAX_ORDERS_PAGE_SIZE } from '../../payments/receipts.ts';
import { defineTool } from '../tool.ts';

const Order = z.object({
  publicOrderId: z.string(),
  paymentSessionId: z.string(),
  orderId: z.string().nullable(),
  amount: z.number(),
  currency: z.string(),
  token: z.string(),
  tokenAmount: z.string(),
  network: z.string(),
  transactionHash: z.string(),
  paidAt: z.string(),
});

export const listOrders = defineTool({
  name: 'list_orders',
  title: 'Paid orders',
  description: `Paid orders of the authorization's mode (test or live), newest first, a page at a time: page from 1, size 1 to ${MAX_ORDERS_PAGE_SIZE} (20 unless given); hasMore says whether the next page has orders.`,
  scope: 'orders:read',
  input: z.strictObject({
    page: z.number().int().min(1).optional().describe('Page number, from 1'),
    size: z.number().int().min(1).max(MAX_ORDERS_PAGE_SIZE).optional().describe('Orders per page'),
  }),
  output: z.object({ orders: z.array(Order), page: z.number().int(), size: z.number().int(), hasMore: z.boolean() }),
  run: (context, access, args) => listPaidOrders(context.db, access.grant.mode, access.grant.merchantId, args),
});
