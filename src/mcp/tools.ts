import type { McpTool } from './tool.ts';
import { createApiKeyTool } from './tools/create-api-key.ts';
import { createPaymentSessionTool } from './tools/create-payment-session.ts';
import { getPaymentSettings } from './tools/get-payment-settings.ts';
import { getReceipt } from './tools/get-receipt.ts';
import { listApiKeysTool } from './tools/list-api-keys.ts';
import { listOrders } from './tools/list-orders.ts';
import { listPaymentSessionsTool } from './tools/list-payment-sessions.ts';
import { listRefundsTool, prepareRefundTool, submitRefundTool } from './tools/refunds.ts';

/** Every tool, in the order tools/list shows them (spec E5). */
export const TOOLS: McpTool[] = [
  getPaymentSettings,
  listOrders,
  listPaymentSessionsTool,
  getReceipt,
  listApiKeysTool,
  createPaymentSessionTool,
  createApiKeyTool,
  listRefundsTool,
  prepareRefundTool,
  submitRefundTool,
];
