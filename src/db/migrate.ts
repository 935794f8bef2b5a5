import { type Migration, Migrator } from 'kysely';
import type { Db } from './index.ts';
import * as foundation from './migrations/0001_foundation.ts';
import * as payments from './migrations/0002_payments.ts';
import * as webhooks from './migrations/0003_webhooks.ts';
import * as quoteRetention from './migrations/0004_quote_retention.ts';
import * as accounts from './migrations/0005_accounts.ts';
import * as oauth from './migrations/0006_oauth.ts';
import * as oauthGrants from './migrations/0007_oauth_grants.ts';
import * as acceptedChains from './migrations/0008_accepted_chains.ts';
import * as mcpAudit from './migrations/0009_mcp_audit.ts';
import * as merchantProfile from './migrations/0010_merchant_profile.ts';
import * as dashboardLinks from './migrations/0011_dashboard_links.ts';
import * as dashboardOrders from './migrations/0012_dashboard_orders.ts';
import * as sessionOrigin from './migrations/0013_session_origin.ts';
import * as rateLimits from './migrations/0014_rate_limits.ts';
import * as unfinalizedPayments from './migrations/0015_unfinalized_payments.ts';
import * as changeNotifications from './migrations/0016_change_notifications.ts';
import * as paymentFollowUp from './migrations/0017_payment_follow_up.ts';
import { boundWebhookSecrets } from './migrations/0018_bound_webhook_secrets.ts';
import * as webhookSecretOverlap from './migrations/0019_webhook_secret_overlap.ts';
import { boundSigningKeys } from './migrations/0020_bound_signing_keys.ts';
import * as modes from './migrations/0021_modes.ts';
import * as paymentAttempts from './migrations/0022_payment_attempts.ts';
import * as merchantBrand from './migrations/0023_merchant_brand.ts';
import * as sessionList from './migrations/0024_session_list.ts';
import * as refunds from './migrations/0025_refunds.ts';
import * as credentialModes from './migrations/0026_credential_modes.ts';
import * as payoutWalletModes from './migrations/0027_payout_wallet_modes.ts';
import * as mail from './migrations/0028_mail.ts';
import * as eventList from './migrations/0029_event_list.ts';
import { webhookEndpointModes } from './migrations/0030_webhook_endpoint_modes.ts';
import * as apiKeyNotifications from './migrations/0031_api_key_notifications.ts';
import * as teams from './migrations/0032_teams.ts';
import * as signUps from './migrations/0033_sign_ups.ts';
import * as apiKeyScopes from './migrations/0034_api_key_scopes.ts';
import * as twoFactor from './migrations/0035_two_factor.ts';
import * as agentRefunds from './migrations/0036_agent_refunds.ts';
import * as paymentIdentifiers from './migrations/0038_payment_identifiers.ts';
import * as discoverableLinks from './migrations/0039_discoverable_links.ts';

/** Every migration, in order. A capability adds its own file and one line here. */
export const migrationsWith = (secretKey: Buffer | undefined): Record<string, Migration> => ({
  '0001_foundation': foundation,
  '0002_payments': payments,
  '0003_webhooks': webhooks,
  '0004_quote_retention': quoteRetention,
  '0005_accounts': accounts,
  '0006_oauth': oauth,
  '0007_oauth_grants': oauthGrants,
  '0008_accepted_chains': acceptedChains,
  '0009_mcp_audit': mcpAudit,
  '0010_merchant_profile': merchantProfile,
  '0011_dashboard_links': dashboardLinks,
  '0012_dashboard_orders': dashboardOrders,
  '0013_session_origin': sessionOrigin,
  '0014_rate_limits': rateLimits,
  '0015_unfinalized_payments': unfinalizedPayments,
  '0016_change_notifications': changeNotifications,
  '0017_payment_follow_up': paymentFollowUp,
  '0018_bound_webhook_secrets': boundWebhookSecrets(secretKey),
  '0019_webhook_secret_overlap': webhookSecretOverlap,
  '0020_bound_signing_keys': boundSigningKeys(secretKey),
  '0021_modes': modes,
  '0022_payment_attempts': paymentAttempts,
  '0023_merchant_brand': merchantBrand,
  '0024_session_list': sessionList,
  '0025_refunds': refunds,
  '0026_credential_modes': credentialModes,
  '0027_payout_wallet_modes': payoutWalletModes,
  '0028_mail': mail,
  '0029_event_list': eventList,
  '0030_webhook_endpoint_modes': webhookEndpointModes(secretKey),
  '0031_api_key_notifications': apiKeyNotifications,
  '0032_teams': teams,
  '0033_sign_ups': signUps,
  '0034_api_key_scopes': apiKeyScopes,
  '0035_two_factor': twoFactor,
  '0036_agent_refunds': agentRefunds,
  '0038_payment_identifiers': paymentIdentifiers,
  '0039_discoverable_links': discoverableLinks,
});

/** `secretKey` (TILL_SECRET_KEY) is needed by migrations that re-seal stored secrets, when there are any. */
export async function migrateToLatest(db: Db, options: { secretKey?: Buffer } = {}): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrationsWith(options.secretKey) } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of the migrations this database has not run yet (`till doctor`); reads only. */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrationsWith(undefined) } });
  return (await migrator.getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}
