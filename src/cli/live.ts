import { rmSync } from 'node:fs';
import { findUserByEmail, removeUser } from '../accounts/users.ts';
import type { Db } from '../db/index.ts';
import { revokeMerchantKeys } from '../merchants/api-keys.ts';
import { changeWallet, OPERATOR } from '../merchants/events.ts';
import { merchantsPaidTo } from '../merchants/merchants.ts';
import { listClients, revokeClient } from '../oauth/clients.ts';
import { removeSecretsOfUserGrants } from '../oauth/grant-secrets.ts';
import { removeGrantsOfUser } from '../oauth/grants.ts';
import { archiveSandboxSessions, countPayableSandboxSessions } from '../sessions/sessions.ts';
import { DEMO_USER_EMAIL, demoPayoutKey } from './demo.ts';
import { noneLeft, printResult, takeFlag, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

/** What stands in the way of a live start on this database and data folder; a live start is refused unless all are nothing. */
export type LiveReadiness = {
  /** Sandbox sessions still open (not paid, expired or archived). */
  payableSandboxSessions: number;
  /** Whether the sandbox's demo user (DEMO_USER_EMAIL) still exists. */
  demoUser: boolean;
  /** The demo payout key's file (SANDBOX_PAYOUT_KEY_FILE), when it is still in the data folder, and the wallet it signs for. */
  demoPayoutKey: string | null;
  demoWallet: string | null;
  /** The merchants still paid out to the wallet of that key: live money would go to a key the sandbox left on disk. */
  demoWalletMerchants: string[];
};

/** What a live start (and `till doctor`) checks: run `till live prepare` while any of it is there. */
export async function liveReadiness(db: Db, dataDir: string): Promise<LiveReadiness> {
  const key = demoPayoutKey(dataDir);
  const [payableSandboxSessions, demoUser, demoWalletMerchants] = await Promise.all([
    countPayableSandboxSessions(db),
    findUserByEmail(db, DEMO_USER_EMAIL),
    key?.wallet ? merchantsPaidTo(db, key.wallet, 'live') : [],
  ]);
  return { payableSandboxSessions, demoUser: demoUser !== undefined, demoPayoutKey: key?.file ?? null, demoWallet: key?.wallet ?? null, demoWalletMerchants };
}

export type LivePreparation = {
  /** How many open sandbox sessions were archived: no longer payable anywhere, no webhook sent. */
  sessionsArchived: number;
  /** The demo merchant, when its demo user was there to remove. */
  demoMerchantId: string | null;
  demoUserRemoved: boolean;
  /** The demo merchant's coding-agent grants removed with its user. */
  grantsRemoved: number;
  /** The demo merchant's test API keys and client credentials, revoked. */
  keysRevoked: string[];
  clientsRevoked: string[];
  /** The demo payout key's file, deleted. */
  demoPayoutKeyRemoved: string | null;
  /** The merchants that were paid out to the demo payout wallet, now paid out nowhere until a wallet is set. */
  walletsCleared: string[];
};

/**
 * Readies a database that ran in the sandbox for a live start, in one transaction: archives every
 * open sandbox session (as the dashboard archives one: not payable, no webhook event), removes the
 * sandbox's demo user (its sign-in sessions and coding-agent grants with it), revokes its
 * merchant's test API keys and client credentials, so nobody can act for the demo merchant in live,
 * and clears the payout wallet of every merchant paid out to the demo payout key's wallet (recorded
 * as a wallet change by the operator). Once that is committed, the key's file is deleted: a crash
 * between the two leaves the file for the next run. The merchant rows and the sandbox history stay,
 * unseen by a live service. Running it again finds nothing to do.
 */
export async function prepareForLive(db: Db, dataDir: string, now = Date.now()): Promise<LivePreparation> {
  const key = demoPayoutKey(dataDir);
  const prepared = await db.transaction().execute(async (trx) => {
    const sessionsArchived = (await archiveSandboxSessions(trx, now)).length;
    const walletsCleared = key?.wallet ? await merchantsPaidTo(trx, key.wallet, 'live') : [];
    for (const merchantId of walletsCleared) await changeWallet(trx, { merchantId, actor: OPERATOR, mode: 'live', walletAddress: null }, now);
    const nothing = { demoMerchantId: null, demoUserRemoved: false, grantsRemoved: 0, keysRevoked: [], clientsRevoked: [] };
    const demo = await findUserByEmail(trx, DEMO_USER_EMAIL);
    if (!demo) return { sessionsArchived, ...nothing, walletsCleared };
    await removeSecretsOfUserGrants(trx, demo.id);
    const grantsRemoved = await removeGrantsOfUser(trx, demo.id);
    const demoUserRemoved = await removeUser(trx, demo.id);
    const keysRevoked = await revokeMerchantKeys(trx, demo.merchantId, 'test', now);
    const clientsRevoked: string[] = [];
    for (const { clientId } of await listClients(trx, demo.merchantId))
      if (await revokeClient(trx, clientId, now, demo.merchantId)) clientsRevoked.push(clientId);
    return { sessionsArchived, demoMerchantId: demo.merchantId, demoUserRemoved, grantsRemoved, keysRevoked, clientsRevoked, walletsCleared };
  });
  if (key) rmSync(key.file, { force: true });
  return { ...prepared, demoPayoutKeyRemoved: key?.file ?? null };
}

function summary(done: LivePreparation): string {
  const lines = [
    done.sessionsArchived
      ? `Archived ${done.sessionsArchived} open sandbox session(s): no longer payable, no webhook sent.`
      : 'No open sandbox session to archive.',
    done.demoUserRemoved
      ? `Removed the demo user ${DEMO_USER_EMAIL} of ${done.demoMerchantId} (and ${done.grantsRemoved} coding-agent grant(s)); revoked ${done.keysRevoked.length} test API key(s) and ${done.clientsRevoked.length} client credential(s) of it.`
      : 'No demo user to remove.',
    done.demoPayoutKeyRemoved ? `Deleted the sandbox demo payout key ${done.demoPayoutKeyRemoved}.` : 'No sandbox demo payout key to delete.',
    ...done.walletsCleared.map(
      (merchantId) =>
        `Cleared the payout wallet of ${merchantId}: it was the sandbox demo wallet. Set one of yours before it takes payments: till merchant set-wallet ${merchantId} 0x…`,
    ),
    'The database is ready for a live start.',
  ];
  return lines.join('\n');
}

/** `till live prepare [--json]` */
export async function liveCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub !== 'prepare') throw new UsageError('live commands: prepare [--json]');
  noneLeft(args);
  const done = await withDatabase(({ db }, config) => prepareForLive(db, config.dataDir));
  printResult(json, done, summary(done));
}
