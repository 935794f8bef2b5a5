import { getAddress } from 'viem';
import { listPending } from '../payments/payments.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

const DEFAULT_LIMIT = 100;

/** `till payments pending [--limit N] [--json]`: PENDING payments, oldest first, with what the reconciler last found. */
export async function paymentsCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub !== 'pending') throw new UsageError('usage: till payments pending [--limit N] [--json]');
  const limitText = takeOption(args, '--limit');
  noneLeft(args);
  const limit = limitText === undefined ? DEFAULT_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError('--limit must be a whole number from 1 to 10000');
  const now = Date.now();
  const payments = await withDatabase(async ({ db }, config) =>
    (await listPending(db, config.modes, limit)).map((p) => ({
      mode: p.mode,
      paymentId: p.id,
      sessionId: p.session_id,
      merchantId: p.merchant_id,
      payer: getAddress(p.payer),
      payTo: getAddress(p.pay_to),
      value: p.value.toString(),
      ageSeconds: Math.max(0, Math.round((now - p.created_at) / 1000)),
      validBefore: new Date(Number(p.valid_before) * 1000).toISOString(),
      reportedTransaction: p.reported_tx_hash,
      checks: p.checks,
      lastCheckedAt: p.checked_at === null ? null : new Date(p.checked_at).toISOString(),
      lastFinding: p.last_finding,
      nextCheckAt: p.next_check_at === null ? null : new Date(p.next_check_at).toISOString(),
    })),
  );
  const lines = payments.map(
    (p) =>
      `${p.paymentId}  ${p.sessionId}  age ${p.ageSeconds}s  valid before ${p.validBefore}  checks ${p.checks}` +
      `${p.reportedTransaction ? `  reported ${p.reportedTransaction}` : ''}\n    last finding: ${p.lastFinding ?? 'not looked at yet'}`,
  );
  printResult(json, { payments }, payments.length ? lines.join('\n') : 'No PENDING payments.');
}
