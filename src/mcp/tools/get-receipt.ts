import { z } from 'zod';
import { explorerTxUrlOf, networkOf } from '../../config.ts';
import { findReceipt, normalizePublicOrderId, Receipt } from '../../payments/receipts.ts';
import { defineTool, ToolRefusal } from '../tool.ts';

export const getReceipt = defineTool({
  name: 'get_receipt',
  title: 'Order receipt',
  description: 'The public receipt of one of this account’s orders, by publicOrderId, with or without the TX- prefix.',
  scope: 'orders:read',
  input: z.strictObject({ publicOrderId: z.string().min(1).max(100).describe('The order’s public id, e.g. TX-… (the prefix may be left out)') }),
  output: Receipt,
  async run(context, access, { publicOrderId }) {
    const receipt = await findReceipt(context.db, publicOrderId, {
      modes: [access.grant.mode],
      explorerTxUrl: (mode) => explorerTxUrlOf(context.config, mode),
      network: (mode) => networkOf(context.config, mode),
      merchantId: access.grant.merchantId,
    });
    if (!receipt) throw new ToolRefusal('not_found', `No order ${normalizePublicOrderId(publicOrderId)} on this account.`);
    return receipt;
  },
});
