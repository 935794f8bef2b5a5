import type { AppContext } from '../context.ts';
import { paymentSettings } from '../merchants/merchants.ts';
import type { McpAccess } from '../oauth/mcp-access.ts';

export const QUICKSTART_URI = 'service://quickstart';
export const QUICKSTART_SCOPE = 'settings:read' as const;

/** The quickstart, rendered from the account as it is now: what it accepts, whether it can be paid, how to call the API. */
export async function quickstartMarkdown(context: AppContext, access: McpAccess): Promise<string> {
  const settings = await paymentSettings(context.db, access.grant.merchantId, access.grant.mode, { baseUrl: context.config.baseUrl });
  if (!settings) return '# Till quickstart\n\nThis merchant account no longer exists.\n';
  const chains = settings.chains.map((chain) => `| ${chain.name} | ${chain.tokens.join(', ')} | ${chain.payoutAddressConfigured ? 'yes' : 'no'} |`).join('\n');
  const payout = settings.payoutAddressConfigured
    ? 'A payout address is set: payments go straight to it.'
    : 'No payout address is set yet, so sessions cannot be paid until the operator sets one (`till merchant set-wallet`), unless a session names its own `publicAddress`.';
  return `# Till quickstart for ${settings.businessName}

${access.grant.mode === 'sandbox' ? 'This access is to **test data**: the money is fake.\n\n' : ''}## What the account accepts

| Chain | Tokens | Payout address set |
|---|---|---|
${chains}

${payout}

## Taking a payment

The payment API is at \`${settings.apiBasePath}\` (${settings.apiBaseUrl}). Your server creates a
payment session with an API key (the tool \`create_api_key\` makes one, shown once):

\`\`\`sh
curl -s -X POST ${settings.apiBaseUrl}/payment_session \\
  -H "X-SC-ApiKey: $TILL_API_KEY" -H 'Content-Type: application/json' \\
  -d '{"amount": 12.50, "currency": "USD", "orderId": "order-1001"}'
# {"sessionId":"ps_…","redirectUrl":"${context.config.baseUrl}/checkout/pay?uid=ps_…"}
\`\`\`

Send the buyer to \`redirectUrl\`, or let an agent pay \`GET /x402/session/{sessionId}\` over x402.
Paid orders come to your webhook; the tools \`list_orders\` and \`get_receipt\` read them.
`;
}
