import { z } from 'zod';
import { keyModeOf } from '../../common/modes.ts';
import { listApiKeys } from '../../merchants/api-keys.ts';
import { defineTool } from '../tool.ts';

export const listApiKeysTool = defineTool({
  name: 'list_api_keys',
  title: 'API keys',
  description:
    'The account’s active API keys of the authorization’s mode (test or live), masked (an ellipsis and the last four characters), and their count. Never the keys themselves.',
  scope: 'keys:read',
  input: z.strictObject({}),
  output: z.object({
    keys: z.array(z.object({ keyId: z.string(), masked: z.string(), mode: z.enum(['test', 'live']), createdAt: z.string() })),
    count: z.number().int(),
  }),
  async run(context, access) {
    const { keys: all } = await listApiKeys(context.db, access.grant.merchantId);
    const keys = all.filter((key) => key.mode === keyModeOf(access.grant.mode));
    return {
      keys: keys.map(({ keyId, masked, mode, createdAt }) => ({ keyId, masked, mode, createdAt: new Date(createdAt).toISOString() })),
      count: keys.length,
    };
  },
});
