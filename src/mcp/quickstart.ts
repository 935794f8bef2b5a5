import type { AppContext } from '../context.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';

export const QUICKSTART_URI = 'service://quickstart';
export const QUICKSTART_SCOPE = 'settings:read' as const;

/** The quickstart, rendered from the account as it is now. */
export async function quickstartMarkdown(context: AppContext, access: McpAccess): Promise<string> {
  return `# Till quickstart\n\nMerchant ${access.grant.merchantId} at ${context.config.baseUrl}.\n`;
}
