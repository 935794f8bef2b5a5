import { type Config, ConfigError, loadConfig } from '../config.ts';
import { openDatabase } from '../db/index.ts';
import { liveReadiness } from './live.ts';
import {
  type Check,
  checkFacilitatorCredentials,
  checkFacilitatorSupported,
  checkRpcChain,
  checkRpcLogRange,
  checkTokenDomain,
  databaseChecks,
  payoutWalletChecks,
  publicUrlCheck,
  sandboxDataCheck,
  secretKeyCheck,
  webhookUrlCheck,
} from './live-checks.ts';
import { smtpCheck } from './mail.ts';
import { noneLeft, takeFlag } from './output.ts';

const MARK: Record<Check['status'], string> = { ok: '✓', failed: '✗', skipped: '–' };

/** Every check of a configuration, in the order an operator fixes them; nothing is written. */
async function runChecks(config: Config): Promise<Check[]> {
  const checks: Check[] = [
    {
      name: 'mode',
      status: 'ok',
      detail:
        config.mode === 'live'
          ? `live: real USDC on Base through ${config.facilitator.kind === 'coinbase' ? "Coinbase's facilitator" : 'the facilitator'} at ${config.facilitatorUrl}`
          : 'sandbox: fake money on the local chain (set TILL_FACILITATOR=coinbase or TILL_FACILITATOR_URL for live mode)',
    },
    secretKeyCheck(config, process.env),
    publicUrlCheck(config),
  ];
  const database = openDatabase(config);
  try {
    const db = await databaseChecks(config, database.db);
    checks.push(...db);
    const usable = db.every((check) => check.status === 'ok');
    const network = Promise.all([
      checkFacilitatorSupported(config),
      checkFacilitatorCredentials(config),
      checkRpcChain(config, { headAge: true }),
      checkRpcLogRange(config),
      checkTokenDomain(config),
    ]);
    const [[supported, credentials, chain, logRange, token], mail] = await Promise.all([network, smtpCheck(config)]);
    checks.push(supported, credentials, ...chain, logRange, token, mail);
    if (config.mode === 'live') {
      if (usable)
        checks.push(
          await payoutWalletChecks(database.db),
          // Beside test mode, sandbox data is test mode's own; only a live-only deployment asks for it to be cleared.
          ...(config.modes.includes('sandbox') ? [] : [sandboxDataCheck(await liveReadiness(database.db, config.dataDir))]),
          await webhookUrlCheck(database.db),
        );
      else checks.push({ name: "merchants' payout wallets", status: 'skipped', detail: 'the database is not ready' });
    }
  } finally {
    await database.close();
  }
  return checks;
}

export async function doctorCommand(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  noneLeft(args);
  let checks: Check[];
  try {
    checks = await runChecks(loadConfig());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    checks = [
      {
        name: 'settings',
        status: 'failed',
        detail: error.message,
        fix: `fix ${error.setting} (see .env.example and docs/operations.md)`,
        setting: error.setting,
      },
    ];
  }
  const healthy = checks.every((check) => check.status !== 'failed');
  if (json) process.stdout.write(`${JSON.stringify({ ok: healthy, checks })}\n`);
  else
    process.stdout.write(
      `${checks.map((check) => `${MARK[check.status]} ${check.name}: ${check.detail}${check.fix ? `\n    fix: ${check.fix}` : ''}`).join('\n')}\n${healthy ? 'Ready.' : 'Not ready: fix each ✗ above, then run till doctor again.'}\n`,
    );
  process.exitCode = healthy ? 0 : 1;
}
