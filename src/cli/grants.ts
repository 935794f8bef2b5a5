import { keyModeOf } from '../common/modes.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { listGrants, revokeGrant } from '../oauth/grants.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

const when = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());

/** A merchant's authorized coding agents (OAuth grants to MCP clients): list them, revoke one. */
export async function grantsCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  const merchantId = takeOption(args, '--merchant');
  if (sub === 'list') {
    noneLeft(args);
    if (!merchantId) throw new UsageError('grants list needs --merchant MERCHANT_ID');
    const grants = await withDatabase(async ({ db }) => {
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return listGrants(db, merchantId);
    });
    const rows = grants.map((g) => ({
      grant_id: g.id,
      client_id: g.clientId,
      client_name: g.clientName,
      scopes: g.scopes,
      mode: keyModeOf(g.mode),
      created_at: new Date(g.createdAt).toISOString(),
      last_used_at: g.lastUsedAt === null ? null : new Date(g.lastUsedAt).toISOString(),
    }));
    const human = grants.length
      ? grants
          .map(
            (g) =>
              `${g.id}  ${g.clientName} (${g.clientId})\n  ${keyModeOf(g.mode)} data; scopes: ${g.scopes.join(' ')}; since ${when(g.createdAt)}; last used ${when(g.lastUsedAt)}`,
          )
          .join('\n')
      : `Merchant ${merchantId} has authorized no coding agent.`;
    printResult(json, { merchant_id: merchantId, grants: rows }, human);
    return;
  }
  if (sub === 'revoke') {
    const [grantId] = args.splice(0, 1);
    noneLeft(args);
    if (!grantId || !merchantId) throw new UsageError('grants revoke needs GRANT_ID --merchant MERCHANT_ID');
    const revoked = await withDatabase(({ db }) => revokeGrant(db, grantId, 'merchant', Date.now(), merchantId));
    if (!revoked) throw new UsageError(`no active grant ${grantId} for merchant ${merchantId}`);
    printResult(json, { grant_id: grantId, revoked: true }, `Grant ${grantId} revoked; its tokens stop working at their next call.`);
    return;
  }
  throw new UsageError('grants commands: list --merchant MERCHANT_ID [--json] | revoke GRANT_ID --merchant MERCHANT_ID [--json]');
}
