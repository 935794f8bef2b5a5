import { listToolCalls } from '../mcp/audit.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

/** The audit of a merchant's MCP tool calls, newest first: `till audit list --merchant M [--limit N] [--json]`. */
export async function auditCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  const merchantId = takeOption(args, '--merchant');
  const limitText = takeOption(args, '--limit') ?? '50';
  noneLeft(args);
  if (sub !== 'list' || !merchantId) throw new UsageError('audit commands: list --merchant MERCHANT_ID [--limit N] [--json]');
  const limit = Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
  const calls = await withDatabase(async ({ db }) => {
    if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
    return listToolCalls(db, merchantId, limit);
  });
  const rows = calls.map((c) => ({
    at: new Date(c.createdAt).toISOString(),
    grant_id: c.grantId,
    client_id: c.clientId,
    tool: c.tool,
    outcome: c.outcome,
    reason: c.reason,
    arguments_sha256: c.argumentsSha256,
  }));
  const human = rows.length
    ? rows
        .map(
          (r) =>
            `${r.at}  ${r.tool}  ${r.outcome}${r.reason ? ` (${r.reason})` : ''}  ${r.client_id}  grant ${r.grant_id}  args ${r.arguments_sha256.slice(0, 12)}…`,
        )
        .join('\n')
    : `No MCP tool calls for merchant ${merchantId}.`;
  printResult(json, { merchant_id: merchantId, calls: rows }, human);
}
