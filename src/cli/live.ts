import { findUserByEmail, removeUser } from '../accounts/users.ts';
import type { Db } from '../db/index.ts';
import { revokeMerchantKeys } from '../merchants/api-keys.ts';
import { listClients, revokeClient } from '../oauth/clients.ts';
import { removeSecretsOfUserGrants } from '../oauth/grant-secrets.ts';
import { removeGrantsOfUser } from '../oauth/grants.ts';
import { archiveSandboxSessions, countPayableSandboxSessions } from '../sessions/sessions.ts';
import { DEMO_USER_EMAIL } from './demo.ts';
import { noneLeft, printResult, takeFlag, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

/** What stands in the way of a live start on this database; a live start is refused unless both are nothing. */
export type LiveReadiness = {
  /** Sandbox sessions still open (not paid, expired or archived). */
  payableSandboxSessions: number;
  /** Whether the sandbox's demo user (DEMO_USER_EMAIL) still exists. */
  demoUser: boolean;
};

/** What a live start (and `till doctor`) checks: run `till live prepare` while either is there. */
export async function liveReadiness(db: Db): Promise<LiveReadiness> {
  const [payableSandboxSessions, demoUser] = await Promise.all([countPayableSandboxSessions(db), findUserByEmail(db, DEMO_USER_EMAIL)]);
  return { payableSandboxSessions, demoUser: demoUser !== undefined };
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
};

/**
 * Readies a database that ran in the sandbox for a live start, in one transaction: archives every
 * open sandbox session (as the dashboard archives one: not payable, no webhook event), removes the
 * sandbox's demo user (its sign-in sessions and coding-agent grants with it) and revokes its
 * merchant's test API keys and client credentials, so nobody can act for the demo merchant in live.
 * The merchant row and the sandbox history stay, unseen by a live service. Running it again finds
 * nothing to do.
 */
export async function prepareForLive(db: Db, now = Date.now()): Promise<LivePreparation> {
  return db.transaction().execute(async (trx) => {
    const sessionsArchived = (await archiveSandboxSessions(trx, now)).length;
    const demo = await findUserByEmail(trx, DEMO_USER_EMAIL);
    if (!demo) return { sessionsArchived, demoMerchantId: null, demoUserRemoved: false, grantsRemoved: 0, keysRevoked: [], clientsRevoked: [] };
    await removeSecretsOfUserGrants(trx, demo.id);
    const grantsRemoved = await removeGrantsOfUser(trx, demo.id);
    const demoUserRemoved = await removeUser(trx, demo.id);
    const keysRevoked = await revokeMerchantKeys(trx, demo.merchantId, 'test', now);
    const clientsRevoked: string[] = [];
    for (const { clientId } of await listClients(trx, demo.merchantId))
      if (await revokeClient(trx, clientId, now, demo.merchantId)) clientsRevoked.push(clientId);
    return { sessionsArchived, demoMerchantId: demo.merchantId, demoUserRemoved, grantsRemoved, keysRevoked, clientsRevoked };
  });
}

function summary(done: LivePreparation): string {
  const lines = [
    done.sessionsArchived
      ? `Archived ${done.sessionsArchived} open sandbox session(s): no longer payable, no webhook sent.`
      : 'No open sandbox session to archive.',
    done.demoUserRemoved
      ? `Removed the demo user ${DEMO_USER_EMAIL} of ${done.demoMerchantId} (and ${done.grantsRemoved} coding-agent grant(s)); revoked ${done.keysRevoked.length} test API key(s) and ${done.clientsRevoked.length} client credential(s) of it.`
      : 'No demo user to remove.',
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
  const done = await withDatabase(({ db }) => prepareForLive(db));
  printResult(json, done, summary(done));
}
