import { z } from 'zod';
import { TillError } from '../../common/errors.ts';
import { paymentSettings } from '../../merchants/merchants.ts';
import { defineTool } from '../tool.ts';

export const getPaymentSettings = defineTool({
  name: 'get_payment_settings',
  title: 'Payment settings',
  description:
    'Business details, the chains the account accepts and the tokens on each, and whether a payout address is configured (never the address itself).',
  scope: 'settings:read',
  input: z.strictObject({}),
  output: z.object({
    businessName: z.string(),
    payoutAddressConfigured: z.boolean(),
    chains: z.array(z.object({ name: z.string(), tokens: z.array(z.string()), payoutAddressConfigured: z.boolean() })),
    apiBasePath: z.string(),
    apiBaseUrl: z.string(),
  }),
  async run(context, access) {
    const settings = await paymentSettings(context.db, access.grant.merchantId, access.grant.mode, { baseUrl: context.config.baseUrl });
    if (!settings) throw new TillError('not_found', { what: 'The merchant account' });
    const { businessName, payoutAddressConfigured, chains, apiBasePath, apiBaseUrl } = settings;
    return { businessName, payoutAddressConfigured, chains, apiBasePath, apiBaseUrl };
  },
});
